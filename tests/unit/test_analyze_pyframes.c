/* Python frames in traces: a MODULE flagged MST_MODULE_F_PYTHON is a source file, its FRAMEs
 * carry the line and the function, and the analyzer names them `file:line in function`. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "symbolize.h"
#include "tracegen.h"

/* A MODULE record with flags, which tracegen_module does not write. */
Test(pyframes, symbolize_formats_file_line_function)
{
    char buf[128];
    cr_assert_str_eq(symbolize_python_frame("/srv/train.py", 42, "Model.forward", buf, sizeof buf),
                     "/srv/train.py:42 in Model.forward");
    cr_assert_str_eq(symbolize_python_frame(NULL, 0, "", buf, sizeof buf), "?:0 in ?");
    char small[8];
    cr_assert_str_eq(symbolize_python_frame("a.py", 7, "f", small, sizeof small), "a.py:7 ");
}

Test(pyframes, model_names_python_and_native_frames_of_one_site)
{
    struct tracegen *g = tracegen_new_memory(NULL);
    uint32_t th = tracegen_thread(g, 1, "main");
    /* outermost first: <module> at line 90, Model.forward at 12, then a native allocator */
    uint32_t native = tracegen_module(g, "/opt/lib/libtorch_cuda.so", 0x7f0000000000, 0x100000);
    cr_assert_eq(tracegen_python_module(g, "/srv/train.py"), native + 1);
    uint32_t f1 = tracegen_frame(g, 0, native + 1, "<module>", 0x8000000100000000ull | 90, 90);
    uint32_t f2 =
        tracegen_frame(g, f1, native + 1, "Model.forward", 0x8000000200000000ull | 12, 12);
    uint32_t f3 = tracegen_frame(g, f2, native, "alloc_block", 0x7f0000001234, 0x1234);
    tracegen_malloc(g, 10, th, 0xa000, 4096, MST_CAT_UNKNOWN, f3, 0);
    size_t size;
    const void *data = tracegen_data(g, &size);
    char err[256];
    struct model_options o = {0};
    struct model *m = model_replay_memory(data, size, "t.mst", &o, NULL, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    const struct reader *r = model_reader(m);
    cr_assert_eq(reader_module(r, native + 1)->flags, MST_MODULE_F_PYTHON);
    cr_assert_eq(reader_module(r, native)->flags, 0);
    const char *frames[8];
    size_t n = model_site_frames(m, f3, frames, 8);
    cr_assert_eq(n, 3);
    cr_assert(strstr(frames[0], "alloc_block") && strstr(frames[0], "libtorch_cuda.so"), "%s",
              frames[0]);
    cr_assert_str_eq(frames[1], "/srv/train.py:12 in Model.forward");
    cr_assert_str_eq(frames[2], "/srv/train.py:90 in <module>");
    model_free(m);
    tracegen_free(g);
}
