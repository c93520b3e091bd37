/*
 * The protocols' syscalls with no runtime at all (BENCHMARKS.md "Prune: the floors, and where the CPU
 * goes"): what a prune and an acquire + release cost the kernel on this disk before a line of JavaScript
 * runs. The benchmark compiles it (cc -O2) and times it beside the baselines, so each run says how much of a ratio is the
 * disk's. The sequences follow the Node layer's port calls (NodeFileSystem.ts, syncFileSystem.ts) for one
 * prune and one acquire + release, done one after the other (ours overlaps a run's deletion with the next
 * run's protocol, so its wall time can be lower than this floor's):
 *
 *   floor prune TENANT      the prune's set-up (lstat of work root, category and tenant; the tenant's
 *                           prune marker: exclusive create + write + close, lstat; the stamp: create, utimes;
 *                           .cleanup/ and .trash/: mkdir, lstat; the .cleanup listing), the scan of every run
 *                           (manifest read: open, fstat, read to EOF, close; .leases lstat + listing), then
 *                           per run the cleanup marker (exclusive create + write + close, lstat), lstat of
 *                           the run, the manifest and .leases read again, rename into .trash/, the marker's
 *                           release (lstat, unlink), and the removal walk with one fstatat per file for the
 *                           bytes it reports; the prune marker's release last.
 *   floor prune-uncounted TENANT
 *                           the same without the removal walk's fstatat per file: what deleting costs when
 *                           nothing is counted. The difference to `prune` is what the sizes a prune reports
 *                           (disk usage and apparent size both come from that one fstatat) cost the kernel.
 *   floor acquire DIR N     N acquire + release pairs: staging mkdir, manifest create + write + fsync, .leases
 *                           mkdir, lease create + write, lstat of the name, rename into place, the identity
 *                           lstats (3), their re-check on release (3), lease unlink, .leases lstat + listing,
 *                           the releasedAt stamp written in place.
 *   floor mkdtemp DIR N     the acquire baseline in C: mkdtemp, manifest create + write, unlink, rmdir.
 *
 * Prints "cpu_ms wall_ms" (getrusage user + system of this process; monotonic wall); exits 1 on any
 * failure the sequence does not expect, so a floor that did not do its work never looks fast.
 * Test-free on purpose: a measuring tool of the benchmark, never part of the package.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define CREATE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)

static const char MANIFEST[] =
  "{\"version\":2,\"category\":\"bench\",\"tenant\":\"t\",\"runId\":\"20261201t000000000z-00000000-00000000\","
  "\"kind\":\"generated\",\"createdAt\":0,\"createdBy\":{\"host\":\"vm\",\"pid\":1234}}";
static const char LEASE[] =
  "{\"version\":2,\"host\":\"vm\",\"bootId\":\"00000000-0000-0000-0000-000000000000\",\"pid\":1234,"
  "\"processStartedAt\":0,\"acquiredAt\":0,\"heartbeatAt\":0}";
static const char MARKER[] = "{\"version\":1,\"purpose\":\"cleanup\",\"host\":\"vm\",\"pid\":1234,\"createdAt\":0}";

/* Whether the removal walk stats each file for the sizes it reports (`prune`) or not (`prune-uncounted`). */
static int count_sizes = 1;

static void die(const char *what, const char *path) {
  perror(path);
  fprintf(stderr, "floor: %s failed\n", what);
  exit(1);
}

static void remove_at(int dir_fd, const char *path) {
  DIR *d = fdopendir(dir_fd);
  if (d == NULL) die("fdopendir", path);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    int type = e->d_type;
    if (type == DT_UNKNOWN) {
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) die("fstatat", e->d_name);
      type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
    }
    if (type == DT_DIR) {
      int child = openat(dirfd(d), e->d_name, DIR_FLAGS);
      if (child < 0) die("openat", e->d_name);
      remove_at(child, e->d_name);
      if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0) die("rmdir", e->d_name);
    } else {
      if (count_sizes && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) die("fstatat", e->d_name);
      if (unlinkat(dirfd(d), e->d_name, 0) != 0) die("unlink", e->d_name);
    }
  }
  closedir(d);
}

/* The port's small readFile: open (no follow), fstat, read to EOF, close. A missing file is expected. */
static void read_small(const char *path) {
  char buffer[4096];
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return;
    die("open", path);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) die("fstat", path);
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) {
  }
  if (n < 0) die("read", path);
  close(fd);
}

/* The port's readDirectory: lstat, then open + list + close. A missing directory is expected. */
static void list(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno == ENOENT) return;
    die("lstat", path);
  }
  int fd = open(path, DIR_FLAGS);
  if (fd < 0) die("open", path);
  DIR *d = fdopendir(fd);
  if (d == NULL) die("fdopendir", path);
  while (readdir(d) != NULL) {
  }
  closedir(d);
}

static void must_lstat(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) die("lstat", path);
}

static void write_new(const char *path, const char *text, int sync) {
  int fd = open(path, CREATE_FLAGS, 0600);
  if (fd < 0) die("create", path);
  if (write(fd, text, strlen(text)) < 0 || (sync && fsync(fd) != 0)) die("write", path);
  close(fd);
}

/* A marker taken (exclusive create, then lstat for its inode) and released (lstat, unlink). */
static void take_marker(const char *path) {
  write_new(path, MARKER, 0);
  must_lstat(path);
}

static void release_marker(const char *path) {
  must_lstat(path);
  if (unlink(path) != 0) die("unlink", path);
}

static void prune(const char *tenant) {
  char path[4096], inner[4096], marker[4096], target[4096], prune_marker[4096];
  /* Set-up: the three directories above the runs, the prune marker, the stamp, the library dirs. */
  snprintf(path, sizeof path, "%s/../..", tenant);
  must_lstat(path);
  snprintf(path, sizeof path, "%s/..", tenant);
  must_lstat(path);
  must_lstat(tenant);
  snprintf(prune_marker, sizeof prune_marker, "%s/.prune", tenant);
  take_marker(prune_marker);
  snprintf(path, sizeof path, "%s/.last-prune", tenant);
  int stamp = open(path, CREATE_FLAGS, 0600);
  if (stamp >= 0) close(stamp);
  if (utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) != 0) die("utimes", path);
  for (int which = 0; which < 2; which++) {
    snprintf(path, sizeof path, "%s/%s", tenant, which == 0 ? ".cleanup" : ".trash");
    if (mkdir(path, 0700) != 0 && errno != EEXIST) die("mkdir", path);
    must_lstat(path);
  }
  snprintf(path, sizeof path, "%s/.cleanup", tenant);
  list(path);
  DIR *t = opendir(tenant);
  if (t == NULL) die("opendir", tenant);
  char **names = NULL;
  size_t count = 0;
  struct dirent *e;
  while ((e = readdir(t)) != NULL) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (count + 1) * sizeof *names);
    names[count++] = strdup(e->d_name);
  }
  closedir(t);
  for (size_t i = 0; i < count; i++) { /* the scan: names come typed from the listing, no lstat per run */
    snprintf(inner, sizeof inner, "%s/%s/.pi-work-run.json", tenant, names[i]);
    read_small(inner);
    snprintf(inner, sizeof inner, "%s/%s/.leases", tenant, names[i]);
    list(inner);
  }
  for (size_t i = 0; i < count; i++) {
    snprintf(path, sizeof path, "%s/%s", tenant, names[i]);
    snprintf(marker, sizeof marker, "%s/.cleanup/%s", tenant, names[i]);
    snprintf(target, sizeof target, "%s/.trash/%s.0123abcd", tenant, names[i]);
    take_marker(marker);
    must_lstat(path);
    snprintf(inner, sizeof inner, "%s/.pi-work-run.json", path);
    read_small(inner);
    snprintf(inner, sizeof inner, "%s/.leases", path);
    list(inner);
    if (rename(path, target) != 0) die("rename", path);
    release_marker(marker);
    int fd = open(target, DIR_FLAGS);
    if (fd < 0) die("open", target);
    remove_at(fd, target);
    if (rmdir(target) != 0) die("rmdir", target);
    free(names[i]);
  }
  free(names);
  release_marker(prune_marker);
}

static void acquire(const char *dir, long pairs) {
  char staged[4096], file[4096], leases[4096], run[4096], path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/.staging", dir);
  mkdir(path, 0700);
  for (long i = 0; i < pairs; i++) {
    snprintf(staged, sizeof staged, "%s/.staging/20261201t000000000z-%08ld-0123abcd.4567cdef", dir, i);
    snprintf(run, sizeof run, "%s/20261201t000000000z-%08ld-0123abcd", dir, i);
    if (mkdir(staged, 0700) != 0) die("mkdir", staged);
    snprintf(file, sizeof file, "%s/.pi-work-run.json", staged);
    write_new(file, MANIFEST, 1);
    snprintf(leases, sizeof leases, "%s/.leases", staged);
    if (mkdir(leases, 0700) != 0) die("mkdir", leases);
    snprintf(file, sizeof file, "%s/.leases/vm-1234-0123abcd.json", staged);
    write_new(file, LEASE, 0);
    lstat(run, &st);
    if (rename(staged, run) != 0) die("rename", run);
    for (int twice = 0; twice < 2; twice++) { /* the identity recorded, then verified on release */
      lstat(run, &st);
      snprintf(path, sizeof path, "%s/.leases", run);
      lstat(path, &st);
      snprintf(path, sizeof path, "%s/.pi-work-run.json", run);
      lstat(path, &st);
    }
    snprintf(path, sizeof path, "%s/.leases/vm-1234-0123abcd.json", run);
    if (unlink(path) != 0) die("unlink", path);
    snprintf(path, sizeof path, "%s/.leases", run);
    list(path); /* lstat + listing */
    snprintf(path, sizeof path, "%s/.pi-work-run.json", run);
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) die("open", path);
    if (fstat(fd, &st) != 0 || pwrite(fd, MANIFEST, strlen(MANIFEST), 0) < 0) die("stamp", path);
    close(fd);
  }
}

static void mkdtemp_baseline(const char *dir, long pairs) {
  char made[4096], file[4096];
  for (long i = 0; i < pairs; i++) {
    snprintf(made, sizeof made, "%s/run-XXXXXX", dir);
    if (mkdtemp(made) == NULL) die("mkdtemp", dir);
    snprintf(file, sizeof file, "%s/.pi-work-run.json", made);
    write_new(file, MANIFEST, 0);
    if (unlink(file) != 0) die("unlink", file);
    if (rmdir(made) != 0) die("rmdir", made);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floor prune TENANT | floor prune-uncounted TENANT | floor acquire DIR N | floor mkdtemp DIR N\n");
    return 2;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (strcmp(argv[1], "prune") == 0) prune(argv[2]);
  else if (strcmp(argv[1], "prune-uncounted") == 0) {
    count_sizes = 0;
    prune(argv[2]);
  }
  else if (strcmp(argv[1], "acquire") == 0 && argc > 3) acquire(argv[2], atol(argv[3]));
  else if (strcmp(argv[1], "mkdtemp") == 0 && argc > 3) mkdtemp_baseline(argv[2], atol(argv[3]));
  else return 2;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  double cpu = (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
  double wall = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  printf("%.1f %.1f\n", cpu, wall);
  return 0;
}
