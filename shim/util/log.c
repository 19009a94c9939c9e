/* log: stack-buffer formatting and write(2); see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static enum log_level log_level = LOG_QUIET;
static int log_muted;

void log_mute(int mute)
{
    log_muted = mute;
}

void log_set_level(enum log_level level)
{
    log_level = level;
}

enum log_level log_get_level(void)
{
    return log_level;
}

void log_write(const char *text, unsigned long len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        text += n;
        len -= (unsigned long)n;
    }
}

static void log_vline(const char *fmt, va_list ap)
{
    if (log_muted)
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "memshim: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    /* A value quoted from the environment or a file may hold a newline or an escape sequence:
     * shown as `?`, so one message stays one line and cannot drive the terminal. */
    for (size_t i = (size_t)n; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    line[len++] = '\n';
    log_write(line, len);
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vline(fmt, ap);
    va_end(ap);
}

void log_info(const char *fmt, ...)
{
    if (log_level < LOG_INFO)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vline(fmt, ap);
    va_end(ap);
}

void log_debug(const char *fmt, ...)
{
    if (log_level < LOG_DEBUG)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_vline(fmt, ap);
    va_end(ap);
}
