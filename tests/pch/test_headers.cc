// Built only for the precompiled header every test reuses (tests/CMakeLists.txt). An
// executable, not an object library, so that it is compiled with the tests' -fPIE: GCC rejects
// a precompiled header made with other code-generation flags.
int main() { return 0; }
