/* The ckh executable: everything happens in ckh_cli_main (harness/cli.c). */
#include "cli/cli.h"

int main(int argc, char **argv)
{
    return ckh_cli_main(argc, argv);
}
