/* file_claim: a name held by a live writer (flock, or the pid its contents record) is not
 * written twice; the alternative names; a dead writer's file is reused. */
#include <criterion/criterion.h>

#include "core_util.h"
#include "file_claim.h"

#include <sys/file.h>
#include <sys/wait.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/memshim-claim-XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    core_rm_tree(dir);
}

static int owner_from_text(int fd)
{
    char head[32] = {0};
    int pid = 0;
    if (pread(fd, head, sizeof head - 1, 0) > 0)
        sscanf(head, "pid %d", &pid);
    return pid;
}

TestSuite(file_claim, .init = setup, .fini = teardown);

Test(file_claim, alternative_names_keep_the_extension)
{
    char out[128];
    cr_assert_eq(file_claim_alt_name(out, sizeof out, "/a.b/run.mst", 42, 1), 0);
    cr_assert_str_eq(out, "/a.b/run.42.mst");
    cr_assert_eq(file_claim_alt_name(out, sizeof out, "/a.b/run", 42, 3), 0);
    cr_assert_str_eq(out, "/a.b/run.42-3");
    cr_assert_eq(file_claim_alt_name(out, sizeof out, "x/.hidden", 7, 1), 0);
    cr_assert_str_eq(out, "x/.hidden.7");
    cr_assert_eq(file_claim_alt_name(out, 8, "/a/run.mst", 42, 1), -1);
}

Test(file_claim, a_locked_name_gets_the_pid)
{
    char path[128], used[256], want[256];
    snprintf(path, sizeof path, "%s/t.mst", dir);
    int first = file_claim_open(path, NULL, used, sizeof used);
    cr_assert_geq(first, 0);
    cr_assert_str_eq(used, path);
    int second = file_claim_open(path, NULL, used, sizeof used);
    cr_assert_geq(second, 0);
    snprintf(want, sizeof want, "%s/t.%d.mst", dir, (int)getpid());
    cr_assert_str_eq(used, want, "the held name was written twice");
    close(first);
    close(second);
}

Test(file_claim, a_live_owner_keeps_the_name_and_a_dead_one_does_not)
{
    char path[128], used[256], text[64];
    snprintf(path, sizeof path, "%s/r.txt", dir);
    /* This process (alive, unlocked: an image before an exec in place) */
    FILE *f = fopen(path, "w");
    fprintf(f, "pid %d\n", (int)getpid());
    fclose(f);
    int fd = file_claim_open(path, owner_from_text, used, sizeof used);
    cr_assert_geq(fd, 0);
    cr_assert_str_neq(used, path);
    close(fd);
    /* A child that has exited and been reaped */
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    snprintf(text, sizeof text, "pid %d\n", (int)child);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    fd = file_claim_open(path, owner_from_text, used, sizeof used);
    cr_assert_geq(fd, 0);
    cr_assert_str_eq(used, path);
    struct stat st;
    fstat(fd, &st);
    cr_assert_eq(st.st_size, 0, "a dead writer's file is truncated and reused");
    close(fd);
}

Test(file_claim, refuses_fifos_without_waiting)
{
    char path[128], used[256];
    snprintf(path, sizeof path, "%s/f.mst", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    core_stderr_begin();
    int fd = file_claim_open(path, NULL, used, sizeof used);
    const char *out = core_stderr_end();
    cr_assert_eq(fd, -1);
    cr_assert(strstr(out, path), "%s", out);
}
