#include "cli/cli.h"

int main(int argc, char** argv) { return xref::run_cli(argc, argv); }
