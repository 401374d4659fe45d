/* job_app: a training-like job of several processes, for the one-recording tests
 * (test_collector_job.c): the main process emits MAIN_RANGES ranges, forks `workers`
 * children that each emit WORKER_RANGES ranges (named "load <i>") and end through `how`
 * ("exit" or "_exit"), waits for them, and emits one last range. With "quiet" or "killed" the
 * children are forked first thing (as a shell or a pyenv shim forks at its start) and emit
 * nothing: processes that must leave no trace; they stay for 300 ms and end through _exit, or
 * are killed (SIGKILL) by the main process after 300 ms.
 *
 *   job_app WORKERS [exit|_exit|quiet|killed]
 *
 * It prints nothing; the counts are fixed so the tests know them in advance. */
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAIN_RANGES 4 /* 3 before the fork, 1 after the workers ended */
#define WORKER_RANGES 3

static void ranges(const char *name, int n) {
    for (int i = 0; i < n; i++) {
        nvtxRangePushA(name);
        nvtxRangePop();
    }
}

int main(int argc, char **argv) {
    int workers = argc > 1 ? atoi(argv[1]) : 2;
    int hard = argc > 2 && !strcmp(argv[2], "_exit");
    int killed = argc > 2 && !strcmp(argv[2], "killed");
    if (killed || (argc > 2 && !strcmp(argv[2], "quiet"))) {
        const struct timespec stay = {0, 300 * 1000 * 1000};
        pid_t kids[16];
        for (int w = 0; w < workers && w < 16; w++) {
            if ((kids[w] = fork()) < 0)
                return 1;
            if (kids[w] == 0) {
                nanosleep(&stay, NULL);
                _exit(0);
            }
        }
        if (killed) {
            nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
            for (int w = 0; w < workers && w < 16; w++)
                kill(kids[w], SIGKILL);
        }
        for (int st; wait(&st) > 0;)
            ;
        workers = 0;
    }
    ranges("step", MAIN_RANGES - 1);
    for (int w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            char name[32];
            snprintf(name, sizeof name, "load %d", w);
            ranges(name, WORKER_RANGES);
            if (hard)
                _exit(0);
            exit(0);
        }
    }
    int failed = 0;
    for (int st; wait(&st) > 0;)
        failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    ranges("step", 1);
    return failed;
}
