/* callgrind_steps: callgrind's client requests as two plain functions, for a Python bench
 * (bench/torch_callgrind.py loads this with ctypes) to count the instructions of chosen training
 * steps only, with the interpreter's start-up and torch's import left uninstrumented. Outside
 * valgrind both are no-ops. */
#include <valgrind/callgrind.h>

void callgrind_steps_begin(void);
void callgrind_steps_end(void);

void callgrind_steps_begin(void)
{
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}

void callgrind_steps_end(void)
{
    CALLGRIND_DUMP_STATS_AT("steps");
    CALLGRIND_STOP_INSTRUMENTATION;
}
