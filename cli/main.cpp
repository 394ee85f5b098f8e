// kvcap: the command-line front end. All logic lives in the libraries; this only dispatches.
#include "common.hpp"

int main(int argc, char** argv) { return kvcap::cli::run_main(argc, argv); }
