/* reader_bus: a mapped trace truncated by another process while it is read: the SIGBUS handler
 * and the windows it watches. See the comment below. */
#include "reader_struct.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a file truncated while mapped ---------------------------------------------------------- */

/* A page of a mapped window that lies wholly past the end of the file (another process truncated
 * the trace while it was read) raises SIGBUS when touched. While any reader holds a window, a
 * handler catches those faults: one inside a registered window maps zero pages over the rest of
 * that window, marks it faulted and lets the read go on, so the reader sees zeros where the file
 * ended, and the replay (which reads records in place) never faults on them either. Before
 * reporting an error the reader looks at the file's size again (file_shrank) and reports a
 * truncated tail instead of corruption. Faults elsewhere go to the previous disposition. */
#define BUS_SLOTS 64

static struct bus_slot bus_slots[BUS_SLOTS];
static pthread_mutex_t bus_lock = PTHREAD_MUTEX_INITIALIZER;
static int bus_users; /* slots in use; the handler is installed while > 0 */
static struct sigaction bus_previous;
static uintptr_t bus_page_size;

static void bus_handler(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < BUS_SLOTS; i++) {
        struct bus_slot *b = &bus_slots[i];
        uintptr_t start = b->start, end = b->end;
        if (a < start || a >= end)
            continue;
        uintptr_t page = a & ~(bus_page_size - 1);
        if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1,
                 0) != MAP_FAILED) {
            b->faulted = 1;
            return;
        }
        break;
    }
    if ((bus_previous.sa_flags & SA_SIGINFO) && bus_previous.sa_sigaction) {
        bus_previous.sa_sigaction(sig, si, uc);
    } else if (!(bus_previous.sa_flags & SA_SIGINFO) && bus_previous.sa_handler != SIG_DFL &&
               bus_previous.sa_handler != SIG_IGN) {
        bus_previous.sa_handler(sig);
    } else {
        /* returning re-runs the faulting access, which now gets the default action */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGBUS, &dfl, NULL);
    }
}

/* A slot for a reader that maps its file, the handler installed with the first; NULL when all
 * are taken (the reader then reads the file instead). */
struct bus_slot *bus_acquire(void)
{
    struct bus_slot *slot = NULL;
    pthread_mutex_lock(&bus_lock);
    for (int i = 0; i < BUS_SLOTS && !slot; i++)
        if (!bus_slots[i].used)
            slot = &bus_slots[i];
    if (slot && bus_users == 0) {
        bus_page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
        struct sigaction sa = {.sa_sigaction = bus_handler, .sa_flags = SA_SIGINFO | SA_NODEFER};
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &bus_previous) != 0)
            slot = NULL;
    }
    if (slot) {
        *slot = (struct bus_slot){.used = 1};
        bus_users++;
    }
    pthread_mutex_unlock(&bus_lock);
    return slot;
}

void bus_release(struct bus_slot *slot)
{
    pthread_mutex_lock(&bus_lock);
    slot->end = 0;
    slot->start = 0;
    slot->used = 0;
    if (--bus_users == 0)
        sigaction(SIGBUS, &bus_previous, NULL);
    pthread_mutex_unlock(&bus_lock);
}

/* The window the handler watches: [p, p + len), or none when p is NULL. */
void bus_watch(struct bus_slot *slot, const void *p, size_t len)
{
    slot->end = 0; /* never a moment with a stale end beside a new start */
    slot->start = (uintptr_t)p;
    slot->end = p ? (uintptr_t)p + len : 0;
}

/* Whether a mapped file is now shorter than the size it was mapped at; its size then in *size. */
int file_shrank(const struct reader *r, uint64_t *size)
{
    struct stat st;
    if (!r->mapped || fstat(r->fd, &st) != 0 || (uint64_t)st.st_size >= r->file_size)
        return 0;
    *size = (uint64_t)st.st_size;
    return 1;
}
