#include <stdio.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "memshim-analyze: not implemented yet\n");
    return 2;
}
