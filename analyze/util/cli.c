/* Trace operands and output files for the commands. See cli.h. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int push(struct cli_traces *t, const char *path)
{
    char **p = realloc(t->paths, (t->count + 1) * sizeof *p);
    if (!p)
        return -1;
    t->paths = p;
    p[t->count] = strdup(path);
    if (!p[t->count])
        return -1;
    t->count++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

static int add_directory(struct cli_traces *t, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "memshim-analyze: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    size_t first = t->count;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!has_suffix(e->d_name, ".mst"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        /* A dangling link, a FIFO or a folder named *.mst: said and skipped, the others read. */
        struct stat st;
        int found = stat(path, &st) == 0;
        if (!found || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "memshim-analyze: %s: skipped: %s\n", path,
                    found ? "not a regular file" : strerror(errno));
            continue;
        }
        rc = push(t, path);
    }
    closedir(d);
    if (t->count > first)
        qsort(t->paths + first, t->count - first, sizeof *t->paths, by_name);
    if (rc == 0 && t->count == first) {
        fprintf(stderr, "memshim-analyze: %s: no *.mst traces in this directory\n", dir);
        return -1;
    }
    return rc;
}

int cli_traces(int argc, char **argv, int first, struct cli_traces *out)
{
    memset(out, 0, sizeof *out);
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "memshim-analyze: %s: %s\n", argv[i], strerror(errno));
            cli_traces_free(out);
            return -1;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "memshim-analyze: %s: not a regular file\n", argv[i]);
            cli_traces_free(out);
            return -1;
        }
        int rc = S_ISDIR(st.st_mode) ? add_directory(out, argv[i]) : push(out, argv[i]);
        if (rc != 0) {
            cli_traces_free(out);
            return -1;
        }
    }
    if (out->count == 0) {
        fprintf(stderr, "memshim-analyze: no trace given\n");
        return -1;
    }
    return 0;
}

void cli_traces_free(struct cli_traces *t)
{
    for (size_t i = 0; i < t->count; i++)
        free(t->paths[i]);
    free(t->paths);
    memset(t, 0, sizeof *t);
}

FILE *cli_output(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "memshim-analyze: %s: %s\n", path, strerror(errno));
    return f;
}

void cli_output_discard(const char *path)
{
    if (path && strcmp(path, "-") != 0)
        unlink(path);
}

int cli_output_close(FILE *f, const char *path)
{
    int failed = ferror(f) != 0;
    if (f == stdout)
        failed |= fflush(f) != 0;
    else
        failed |= fclose(f) != 0;
    if (failed)
        fprintf(stderr, "memshim-analyze: %s: write failed\n", path ? path : "stdout");
    return failed ? -1 : 0;
}
