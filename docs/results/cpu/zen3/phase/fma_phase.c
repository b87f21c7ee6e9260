// Per-window FMA throughput of each of two pinned threads, to see the host's phases.
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double seconds=60, window=0.25;
static double res[2][1000];
__attribute__((noinline)) static void burst(__m256* a, long reps){
  __m256 b=_mm256_set1_ps(0.999999f), c=_mm256_set1_ps(1e-7f);
  __m256 a0=a[0],a1=a[1],a2=a[2],a3=a[3],a4=a[4],a5=a[5],a6=a[6],a7=a[7],a8=a[8],a9=a[9];
  for(long r=0;r<reps;r++){
#define F(x) x=_mm256_fmadd_ps(x,b,c);
    F(a0)F(a1)F(a2)F(a3)F(a4)F(a5)F(a6)F(a7)F(a8)F(a9)
  }
  a[0]=a0;a[1]=a1;a[2]=a2;a[3]=a3;a[4]=a4;a[5]=a5;a[6]=a6;a[7]=a7;a[8]=a8;a[9]=a9;
}

static void* run(void* arg){
  int id=(int)(long)arg; cpu_set_t s; CPU_ZERO(&s); CPU_SET(id,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  __m256 a[10]; for(int i=0;i<10;i++) a[i]=_mm256_set1_ps(1.0f+i*1e-7f);
  __m256 b=_mm256_set1_ps(0.999999f), c=_mm256_set1_ps(1e-7f);
  double t0=now(); int w=0;
  while(w<(int)(seconds/window)){
    double ws=now(); long n=0;
    while(now()-ws<window){ burst(a,1000); n+=1000;}
    res[id][w++]=n*10*16/(now()-ws)/1e9;
  }
  float s2=0; for(int i=0;i<10;i++){float f[8];_mm256_storeu_ps(f,a[i]);s2+=f[0];} if(s2==12345) puts("x");
  (void)t0; return 0;
}
int main(int argc,char**argv){ if(argc>1) seconds=atof(argv[1]);
  pthread_t t[2]; for(long i=0;i<2;i++) pthread_create(&t[i],0,run,(void*)i); for(int i=0;i<2;i++) pthread_join(t[i],0);
  int n=(int)(seconds/window); for(int w=0;w<n;w++) printf("%6.2f %6.1f %6.1f\n",w*window,res[0][w],res[1][w]);
}
