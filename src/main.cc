#include "cli/app.h"

int main(int argc, char** argv) { return dietcode::cli::run(argc, argv); }
