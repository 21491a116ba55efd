// numabench: autonuma-benchmark's workloads as one static Linux program, for
// Linux guests of `numavm run --kernel` (packed into the lab's guest
// initramfs by scripts/lab/initramfs.sh). The semantics are those of
// autonuma-benchmark's programs; the code is ours.
//
//   numa01               two processes, each with half the threads; every
//                        thread writes the whole of its process's memory
//                        (--size per process), pass after pass: the threads
//                        of one process share all of it.
//   numa01_THREAD_ALLOC  as numa01, but each thread allocates and writes its
//                        own share of its process's memory.
//   numa02               one process; each thread writes its own slice of
//                        one allocation (--size in all).
//   numa02_SMT           as numa02 with half the threads (one per core of a
//                        two-way SMT machine).
//
// Each thread writes until --seconds have passed (checked after every pass
// over its memory) and prints one line: the thread, the CPU and node it ended
// on, its passes and bytes. Each process then prints its elapsed time and
// total; numa01's parent prints "done" when both have. Lines start with "NUMABENCH" so that a
// console log can be searched.
//
// Exit status: 0 done; 2 bad arguments (one line on stderr); 1 the system
// refused (memory, threads, fork).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum mode { NUMA01, NUMA01_THREAD_ALLOC, NUMA02, NUMA02_SMT };

struct options {
  enum mode mode;
  const char *name;
  uint64_t size;   // bytes: per process (numa01), in all (numa02)
  double seconds;  // how long each thread writes
  int threads;     // in all; numa01 splits them between its processes
};

struct worker {
  pthread_t thread;
  int index;
  uint8_t *memory;  // what it writes (NULL: allocate `bytes` itself)
  uint64_t bytes;
  double seconds;
  uint64_t passes, written;
  int cpu, node;
  int failed;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *work(void *arg) {
  struct worker *w = arg;
  if (w->memory == NULL) {
    w->memory = malloc(w->bytes);
    if (w->memory == NULL) {
      w->failed = 1;
      return NULL;
    }
  }
  const double end = now() + w->seconds;
  do {
    memset(w->memory, (int)(w->passes & 0xff), w->bytes);
    ++w->passes;
    w->written += w->bytes;
  } while (now() < end);
  unsigned cpu = 0, node = 0;
  syscall(SYS_getcpu, &cpu, &node, NULL);
  w->cpu = (int)cpu;
  w->node = (int)node;
  return NULL;
}

// One process's threads over `memory` (shared: each writes all of it; else
// each its slice), or each thread's own allocation when `memory` is NULL.
// Returns 0, or 1 if the system refused.
static int run_process(const struct options *o, int process, int threads, uint8_t *memory,
                       int shared) {
  struct worker *workers = calloc((size_t)threads, sizeof(struct worker));
  if (workers == NULL) return 1;
  const uint64_t slice = o->size / (uint64_t)threads / 4096 * 4096;
  const double begin = now();
  for (int i = 0; i < threads; ++i) {
    struct worker *w = &workers[i];
    w->index = i;
    w->seconds = o->seconds;
    w->bytes = shared ? o->size : slice;
    w->memory = memory == NULL ? NULL : shared ? memory : memory + (uint64_t)i * slice;
    if (pthread_create(&w->thread, NULL, work, w) != 0) {
      fprintf(stderr, "numabench: cannot start thread %d: %s\n", i, strerror(errno));
      return 1;
    }
  }
  uint64_t total = 0;
  int failed = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(workers[i].thread, NULL);
    const struct worker *w = &workers[i];
    if (w->failed) {
      fprintf(stderr, "numabench: thread %d could not allocate %llu bytes\n", i,
              (unsigned long long)w->bytes);
      failed = 1;
      continue;
    }
    printf("NUMABENCH %s process %d thread %d cpu %d node %d passes %llu bytes %llu\n", o->name,
           process, i, w->cpu, w->node, (unsigned long long)w->passes,
           (unsigned long long)w->written);
    total += w->written;
  }
  const double elapsed = now() - begin;
  printf("NUMABENCH %s process %d threads %d elapsed %.2f s bytes %llu MiB/s %.1f\n", o->name,
         process, threads, elapsed, (unsigned long long)total, (double)total / (1 << 20) / elapsed);
  fflush(stdout);
  free(workers);
  return failed;
}

static int parse_size(const char *text, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return -1;
  uint64_t unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1ull << 10;
  if (*end == 'M' || *end == 'm') unit = 1ull << 20;
  if (*end == 'G' || *end == 'g') unit = 1ull << 30;
  if (unit != 1) ++end;
  if (*end != '\0' || v == 0 || v > (1ull << 46) / unit) return -1;
  *out = v * unit;
  return 0;
}

// One line: what is wrong, and how it is used.
static int usage(const char *why) {
  fprintf(stderr,
          "numabench: %s (usage: numabench numa01|numa01_THREAD_ALLOC|numa02|numa02_SMT "
          "[--size SIZE] [--seconds S] [--threads N])\n",
          why);
  return 2;
}

int main(int argc, char **argv) {
  struct options o = {NUMA02, "numa02", 64ull << 20, 10, 0};
  if (argc < 2) return usage("which workload?");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    printf(
        "usage: numabench WORKLOAD [--size SIZE] [--seconds S] [--threads N]\n"
        "autonuma-benchmark's workloads: numa01 (two processes, each thread writes all of its\n"
        "process's --size), numa01_THREAD_ALLOC (each thread its own share), numa02 (one\n"
        "process, each thread its slice of --size), numa02_SMT (numa02 with half the threads).\n"
        "Defaults: --size 64M, --seconds 10, --threads: the online CPUs.\n");
    return 0;
  }
  static const struct {
    const char *name;
    enum mode mode;
  } kModes[] = {{"numa01", NUMA01},
                {"numa01_THREAD_ALLOC", NUMA01_THREAD_ALLOC},
                {"numa02", NUMA02},
                {"numa02_SMT", NUMA02_SMT}};
  int known = 0;
  for (size_t i = 0; i < sizeof(kModes) / sizeof(kModes[0]); ++i) {
    if (strcmp(argv[1], kModes[i].name) == 0) {
      o.mode = kModes[i].mode;
      o.name = kModes[i].name;
      known = 1;
    }
  }
  if (!known) return usage("unknown workload");
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return usage("a flag without its value");
    const char *flag = argv[i], *value = argv[i + 1];
    char *end = NULL;
    if (strcmp(flag, "--size") == 0) {
      if (parse_size(value, &o.size) != 0) return usage("--size: not a size such as 64M");
    } else if (strcmp(flag, "--seconds") == 0) {
      o.seconds = strtod(value, &end);
      if (end == value || *end != '\0' || !(o.seconds > 0 && o.seconds <= 1e6)) {
        return usage("--seconds: not a duration in seconds");
      }
    } else if (strcmp(flag, "--threads") == 0) {
      long n = strtol(value, &end, 10);
      if (end == value || *end != '\0' || n < 1 || n > 4096) {
        return usage("--threads: not a count from 1 to 4096");
      }
      o.threads = (int)n;
    } else {
      return usage("unknown flag");
    }
  }
  if (o.threads == 0) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cpus > 0 ? (int)cpus : 1;
    if (o.mode == NUMA02_SMT && o.threads > 1) o.threads /= 2;
  }
  const int numa02 = o.mode == NUMA02 || o.mode == NUMA02_SMT;
  // numa01: two processes with half the threads each.
  const int per_process = numa02 ? o.threads : o.threads > 1 ? o.threads / 2 : 1;
  if (o.mode != NUMA01 && o.size / (uint64_t)per_process < 4096) {
    return usage("--size: under a page per thread");
  }
  printf("NUMABENCH %s threads %d size %llu seconds %.1f\n", o.name, o.threads,
         (unsigned long long)o.size, o.seconds);
  fflush(stdout);

  if (numa02) {
    uint8_t *memory = malloc(o.size);
    if (memory == NULL) {
      fprintf(stderr, "numabench: cannot allocate %llu bytes\n", (unsigned long long)o.size);
      return 1;
    }
    return run_process(&o, 0, o.threads, memory, 0);
  }

  pid_t children[2];
  for (int p = 0; p < 2; ++p) {
    children[p] = fork();
    if (children[p] < 0) {
      fprintf(stderr, "numabench: fork: %s\n", strerror(errno));
      return 1;
    }
    if (children[p] == 0) {
      uint8_t *memory = NULL;
      if (o.mode == NUMA01) {
        memory = malloc(o.size);
        if (memory == NULL) {
          fprintf(stderr, "numabench: cannot allocate %llu bytes\n", (unsigned long long)o.size);
          _exit(1);
        }
      }
      _exit(run_process(&o, p, per_process, memory, o.mode == NUMA01));
    }
  }
  int failed = 0;
  for (int p = 0; p < 2; ++p) {
    int status = 0;
    if (waitpid(children[p], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed = 1;
    }
  }
  printf("NUMABENCH %s done%s\n", o.name, failed ? " (a process failed)" : "");
  return failed;
}
