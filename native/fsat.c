/*
 * fsat: the directory-relative syscalls Node does not expose (openat, fstatat, unlinkat, linkat, and renameat2's
 * exchange for the conditional replace), for the
 * Node layer's tree walks: the measuring walk (measureTree, src/layers/node/nativeMeasure.ts) and the
 * removal walk (removeTree, src/layers/node/nativeRemove.ts) run here whole, and a snapshot's per-directory
 * calls (listInfo, linkEach: src/layers/node/snapshotCalls.ts).
 *
 * Why: Node addresses every entry by absolute path, so each lstat/unlink resolves the whole path again and
 * a directory swapped for a symlink between listing and opening could be followed. Relative to an open
 * directory descriptor, with O_NOFOLLOW on every open, neither happens (README "Layers", Node: Walkers).
 *
 * Every function returns a negative errno instead of throwing, so the common "vanished" case costs no Error
 * object; the TypeScript side turns errnos into typed errors.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
/* measureTreeSync(path, maxEntries, maxDepth, cap, maxMs, out) and measureTree(..., callback, cancel): 3 answers
   disk usage, apparent size and file bytes ("Sizes" below). */
#define MEASURE_VERSION 3
/* removeTree and removeTrees: 2 answers the removed disk usage and apparent size ("Sizes" below). */
#define REMOVE_VERSION 2
#define NAME_MAX_BYTES 4096

/*
 * Sizes (README "Retention": one byte count). A walk adds up what `du` does over the same tree: every entry
 * it visits (the root too; directories, links and special files as well as regular files), disk usage as
 * st_blocks × 512 (`du -s -B1`) and apparent size as st_size (`du -sb`), an inode with more than one link
 * once per walk (as du counts it). `content` is regular files' st_size alone (a budget of what files hold:
 * the config tier's).
 */
typedef struct {
  double disk;
  double apparent;
  double content;
} sizes_t;

static sizes_t sizes_of(const struct stat *st) {
  return (sizes_t){ (double)st->st_blocks * 512.0, (double)st->st_size, S_ISREG(st->st_mode) ? (double)st->st_size : 0 };
}

static void add_sizes(sizes_t *total, sizes_t more) {
  total->disk += more.disk;
  total->apparent += more.apparent;
  total->content += more.content;
}

/*
 * One file system (README "How runs stay safe", I3): a child directory is another file system's when its device
 * differs from its parent's or, on Linux, when it is the root of a mount (statx STATX_ATTR_MOUNT_ROOT,
 * Linux 5.8+): a bind mount of a tree on the same file system has the same st_dev, so st_dev alone
 * (`rm --one-file-system`) would let a walk into exactly the bind mount a tool left in a run. Kernels before
 * 5.8 report no mount root: there, and off Linux, only devices are compared. The walks keep each
 * directory's device, so a child costs one statx. 1 when it is, 0 when not, or a negative errno; the child's
 * inode into `ino` (its identity, with the device: "Depth" below).
 */
static int other_device_than(dev_t parent_dev, int child_fd, ino_t *ino, sizes_t *own) {
#if defined(__linux__) && defined(STATX_ATTR_MOUNT_ROOT)
  struct statx child;
  if (statx(child_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &child) == 0) {
    *ino = (ino_t)child.stx_ino;
    *own = (sizes_t){ (double)child.stx_blocks * 512.0, (double)child.stx_size, 0 };
    if (makedev(child.stx_dev_major, child.stx_dev_minor) != parent_dev) return 1;
    return (child.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 && (child.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  }
  if (errno != ENOSYS) return -errno;
#endif
  struct stat st;
  if (fstat(child_fd, &st) != 0) return -errno;
  *ino = st.st_ino;
  *own = sizes_of(&st);
  return st.st_dev != parent_dev;
}

/* Entry types (FsatType in src/layers/node/fsat.ts). */
enum { T_UNKNOWN = 0, T_FILE = 1, T_DIRECTORY = 2, T_SYMLINK = 3, T_OTHER = 4 };

static napi_value number(napi_env env, double value) {
  napi_value out;
  napi_create_double(env, value, &out);
  return out;
}

/*
 * Names are bytes (src/domain/NameBytes.ts): JavaScript gives a path as a string (UTF-8) or, when it holds
 * bytes that are not UTF-8, as a Buffer of its exact bytes (src/layers/node/osPath.ts). 1 with the Buffer's
 * bytes when `value` is one, else 0.
 */
static int buffer_arg(napi_env env, napi_value value, const char **bytes, size_t *length) {
  bool is_buffer = false;
  void *data = NULL;
  if (napi_is_buffer(env, value, &is_buffer) != napi_ok || !is_buffer) return 0;
  if (napi_get_buffer_info(env, value, &data, length) != napi_ok) return 0;
  *bytes = data;
  return 1;
}

/*
 * A path argument (a string, or a Buffer of its bytes) into buf: 0, -EINVAL when it is neither (or a Buffer
 * holding a NUL), -ENAMETOOLONG when it does not fit.
 */
static int path_arg(napi_env env, napi_value value, char *buf, size_t size) {
  const char *bytes = NULL;
  size_t length = 0;
  if (buffer_arg(env, value, &bytes, &length)) {
    if (length > 0 && memchr(bytes, '\0', length) != NULL) return -EINVAL;
    if (length >= size) return -ENAMETOOLONG;
    if (length > 0) memcpy(buf, bytes, length);
    buf[length] = '\0';
    return 0;
  }
  if (napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok) return -EINVAL;
  if (length >= size) return -ENAMETOOLONG;
  napi_get_value_string_utf8(env, value, buf, size, &length);
  return 0;
}

/* A path argument's bytes, whatever their length, in a new NUL-terminated string (free it); NULL when it is not a path or memory ran out. */
static char *path_arg_copy(napi_env env, napi_value value) {
  const char *bytes = NULL;
  size_t length = 0;
  int is_buffer = buffer_arg(env, value, &bytes, &length);
  if (!is_buffer && napi_get_value_string_utf8(env, value, NULL, 0, &length) != napi_ok) return NULL;
  char *out = malloc(length + 1);
  if (out == NULL) return NULL;
  if (is_buffer) {
    if (length > 0) memcpy(out, bytes, length);
    out[length] = '\0';
  } else {
    napi_get_value_string_utf8(env, value, out, length + 1, &length);
  }
  return out;
}

/* Copies a path argument (a string, or a Buffer of its bytes) into buf; 0 when it is neither or too long. */
static int string_arg(napi_env env, napi_value value, char *buf, size_t size) {
  return path_arg(env, value, buf, size) == 0;
}

static int type_of_mode(mode_t mode) {
  if (S_ISREG(mode)) return T_FILE;
  if (S_ISDIR(mode)) return T_DIRECTORY;
  if (S_ISLNK(mode)) return T_SYMLINK;
  return T_OTHER;
}

static int type_of_dirent(unsigned char d_type) {
#ifdef DT_UNKNOWN
  switch (d_type) {
    case DT_REG: return T_FILE;
    case DT_DIR: return T_DIRECTORY;
    case DT_LNK: return T_SYMLINK;
    case DT_UNKNOWN: return T_UNKNOWN;
    default: return T_OTHER;
  }
#else
  (void)d_type;
  return T_UNKNOWN;
#endif
}

/*
 * A directory's entries: names (without "." and ".."), their types and, on Linux, each one's `d_off`: the
 * directory offset just after it, where a listing continued after it begins ("Depth" below).
 */
typedef struct {
  char **names;
  unsigned char *types;
  long long *next;
  size_t count;
} listing_t;

static void free_listing(listing_t *l) {
  for (size_t i = 0; i < l->count; i++) free(l->names[i]);
  free(l->names);
  free(l->types);
  free(l->next);
  *l = (listing_t){ NULL, NULL, NULL, 0 };
}

/* A listing being read: what read_listing and read_fresh_listing share. */
typedef struct {
  listing_t l;
  size_t capacity;
} listing_builder_t;

static int builder_init(listing_builder_t *b) {
  b->capacity = 16;
  b->l = (listing_t){ malloc(b->capacity * sizeof *b->l.names), malloc(b->capacity), malloc(b->capacity * sizeof *b->l.next), 0 };
  if (b->l.names == NULL || b->l.types == NULL || b->l.next == NULL) {
    free_listing(&b->l);
    return ENOMEM;
  }
  return 0;
}

/* Append one entry ("." and ".." are skipped). 0, or ENOMEM with the builder freed. */
static int builder_add(listing_builder_t *b, const char *name, unsigned char d_type, long long next) {
  if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) return 0;
  if (b->l.count == b->capacity) {
    size_t capacity = b->capacity * 2;
    char **more_names = realloc(b->l.names, capacity * sizeof *b->l.names);
    if (more_names != NULL) b->l.names = more_names;
    unsigned char *more_types = more_names == NULL ? NULL : realloc(b->l.types, capacity);
    if (more_types != NULL) b->l.types = more_types;
    long long *more_next = more_types == NULL ? NULL : realloc(b->l.next, capacity * sizeof *b->l.next);
    if (more_next != NULL) b->l.next = more_next;
    if (more_next == NULL) {
      free_listing(&b->l);
      return ENOMEM;
    }
    b->capacity = capacity;
  }
  b->l.names[b->l.count] = strdup(name);
  if (b->l.names[b->l.count] == NULL) {
    free_listing(&b->l);
    return ENOMEM;
  }
  b->l.types[b->l.count] = (unsigned char)type_of_dirent(d_type);
  b->l.next[b->l.count] = next;
  b->l.count++;
  return 0;
}

#ifndef __linux__
/* The entries of an open directory (read_fresh_listing off Linux); the descriptor stays open. 0 or errno. */
static int read_listing(int fd, listing_t *out) {
  int copy = dup(fd);
  if (copy < 0) return errno;
  DIR *dir = fdopendir(copy);
  if (dir == NULL) {
    int error = errno;
    close(copy);
    return error;
  }
  rewinddir(dir); /* the copy shares its offset with `fd`: list from the start */
  listing_builder_t b;
  if (builder_init(&b) != 0) {
    closedir(dir);
    return ENOMEM;
  }
  for (;;) {
    errno = 0;
    struct dirent *entry = readdir(dir);
    if (entry == NULL) {
      int error = errno;
      closedir(dir);
      if (error != 0) {
        free_listing(&b.l);
        return error;
      }
      *out = b.l;
      return 0;
    }
    if (builder_add(&b, entry->d_name, entry->d_type, 0) != 0) {
      closedir(dir);
      return ENOMEM;
    }
  }
}

/* Drop a listing's first `n` entries (a directory listed again, off Linux: those were visited already). */
static void drop_first(listing_t *l, size_t n) {
  if (n > l->count) n = l->count;
  for (size_t i = 0; i < n; i++) free(l->names[i]);
  memmove(l->names, l->names + n, (l->count - n) * sizeof *l->names);
  memmove(l->types, l->types + n, l->count - n);
  memmove(l->next, l->next + n, (l->count - n) * sizeof *l->next);
  l->count -= n;
}
#endif

/* ---------------------------------------------------------------------------------------------------------
 * removeTree: a whole removal walk on the libuv thread pool (napi_async_work), so deleting a tree costs what
 * `rm -rf` costs: no JavaScript per entry, no worker thread to start, no JIT to warm (BENCHMARKS.md). The same
 * budgets, order and answers as the portable walk (pathWalk.ts), which the conformance suite checks:
 * the root is not counted; `maxEntries` removals at most; a directory deeper than `maxDepth` is left in place
 * (with everything above it) and the removal is incomplete; links and files are unlinked, never followed; an
 * entry that vanished meanwhile is skipped; a directory that became a link or file is unlinked as an entry;
 * a mount point is never crossed (`crossed_mount`).
 *
 * Depth (README "Walkers"; DESIGN: a walk's cost in descriptors and memory is bounded whatever the depth).
 * Both walks keep a descriptor and a listing only for the WALK_WINDOW deepest directories of their path.
 * Above those, a directory keeps what it takes to come back to it: its identity (device, inode), its name
 * in its parent and where its listing goes on (the `d_off` after the entry last visited; off Linux, how many
 * were visited). Going deeper than the window closes the shallowest directory held. Coming back up to a
 * closed one re-opens it from the child just finished, `openat(child, "..")`, and goes on only if it is the
 * very directory left (same device and inode); anything else (the directory moved, or the child moved out
 * of it) ends the walk with ESTALE "reopen" (domain/WalkDepth.ts), nothing done through the other
 * directory. ".." is the directory the child's inode sits in, never a symlink and never a name looked up
 * again: a name swapped for a link or another directory meanwhile is not even looked at, and the walk
 * never goes back down by name. Chosen over moving a deep subtree up by rename because it serves the
 * measure (which must not change the tree) and the removal alike, leaves a tree a budget cut exactly as
 * deep as it was, and costs nothing within the window, where nearly every tree lives. The portable walk
 * (pathWalk.ts) follows the same rule with the same window.
 * A removal that continued a listing after a re-open lists the directory once more from the start before
 * its rmdir, so a file system whose offsets move as earlier entries go (tmpfs before Linux 6.6) cannot make
 * it skip one; a directory with something left in place (blocked) is not listed again: nothing more of it
 * would go.
 * Cost: at most WALK_WINDOW + 1 descriptors per walk, and per level above the window a few dozen bytes and
 * its name; no path is kept per level (a report builds the path it names from the names).
 */
#define WALK_WINDOW 16

/*
 * The inodes with more than one link a walk has counted (`counts_once`): an open-addressing set of (device,
 * inode), empty (no allocation) until the first such file, so a tree without hard links pays one comparison
 * per file.
 */
typedef struct {
  dev_t dev;
  ino_t ino;
  int used;
} inode_slot_t;

typedef struct {
  inode_slot_t *slots;
  size_t capacity; /* a power of two, or 0 */
  size_t count;
} inode_set_t;

static size_t inode_hash(dev_t dev, ino_t ino, size_t capacity) {
  uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ULL ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4FULL;
  return (size_t)(h ^ (h >> 29)) & (capacity - 1);
}

static inode_slot_t *inode_find(inode_set_t *s, dev_t dev, ino_t ino) {
  size_t i = inode_hash(dev, ino, s->capacity);
  while (s->slots[i].used && (s->slots[i].dev != dev || s->slots[i].ino != ino)) i = (i + 1) & (s->capacity - 1);
  return &s->slots[i];
}

/* 1 when (dev, ino) was added, 0 when it was there already, -1 when memory ran out. */
static int inode_add(inode_set_t *s, dev_t dev, ino_t ino) {
  if (s->count + 1 > s->capacity / 2) {
    size_t capacity = s->capacity == 0 ? 64 : s->capacity * 2;
    inode_slot_t *old = s->slots;
    size_t old_capacity = s->capacity;
    s->slots = calloc(capacity, sizeof *s->slots);
    if (s->slots == NULL) {
      s->slots = old;
      return -1;
    }
    s->capacity = capacity;
    for (size_t i = 0; i < old_capacity; i++) {
      if (old[i].used) *inode_find(s, old[i].dev, old[i].ino) = old[i];
    }
    free(old);
  }
  inode_slot_t *slot = inode_find(s, dev, ino);
  if (slot->used) return 0;
  *slot = (inode_slot_t){ dev, ino, 1 };
  s->count++;
  return 1;
}

typedef struct {
  int fd;             /* -1 while out of the window */
  dev_t dev;          /* its device: a child on another one is a mount point */
  ino_t ino;          /* with `dev`, its identity: a re-opened directory must be this one */
  char *name;         /* its name in the parent (NULL for the root) */
  listing_t entries;  /* what it has left to visit (nothing while out of the window) */
  size_t index;
  long long offset;   /* the directory offset `entries` began at (Linux) */
  size_t skipped;     /* entries visited before `entries` began (off Linux, where offsets are not kept) */
  double depth;
  int blocked;        /* a child was left in place (depth budget, mount point): this directory stays too */
  int resumed;        /* its listing was continued after a re-open (a removal lists it whole once more) */
  sizes_t own;        /* its own sizes when it was opened (a removal counts them once it is removed) */
} frame_t;

typedef struct {
  char *root;
  double max_entries;
  double max_depth;
  double removed;
  /* What the walk counted ("Sizes"): a measure, every entry it visited; a removal, every entry it removed (a
     prune counts a removed run's bytes without a measuring walk first: README "Retention"). */
  sizes_t sizes;
  inode_set_t linked; /* inodes of more than one link already counted */
  int complete;
  int error;          /* errno of the failure, 0 when none */
  const char *syscall;
  char *error_path;
  char *mount_point;  /* the first mount point met (never crossed), NULL when none */
  frame_t *stack;
  size_t depth, capacity;
  size_t low;         /* the shallowest frame holding a descriptor: stack[low..depth-1] is the window */
  const char *walk;   /* "removeTree" or "measureTree": the syscall named by failures of the walk itself */
  /* The measure on the calling thread only: no directory listed beyond this many names, no entry visited
     after this CLOCK_MONOTONIC deadline (ns); either ends it with `over` set (measure it on the thread pool). */
  size_t listing_limit;
  long long deadline_ns;
  int over;
  /* A measure on the thread pool: a flag JavaScript sets when nobody waits for the answer any more (an
     Int32Array the walk keeps a reference to), read before each entry; NULL when none. */
  int32_t *cancel;
  napi_ref cancel_ref;
  napi_async_work work;
  napi_ref callback;
} removal_t;

/*
 * Whether a non-directory's sizes count in this walk (`st` describes it): once per inode, as du counts a file
 * of several links. 1 to count it, 0 when this walk counted that inode already, -1 when memory ran out
 * (recorded). A removal asks only for what it unlinked, so the inode's other names, met later with one link
 * fewer, are found in the set too.
 */
static int fail(removal_t *r, int error, const char *syscall, const char *dir, const char *name);

static int counts_once(removal_t *r, const struct stat *st) {
  if (st->st_nlink > 1) {
    int added = inode_add(&r->linked, st->st_dev, st->st_ino);
    if (added < 0) return fail(r, ENOMEM, r->walk, r->root, NULL);
    return added;
  }
  if (r->linked.count == 0) return 1;
  return !inode_find(&r->linked, st->st_dev, st->st_ino)->used;
}

/* Add a non-directory's sizes unless this walk counted its inode already. 0, or -1 (recorded). */
static int count_entry(removal_t *r, const struct stat *st) {
  int counts = counts_once(r, st);
  if (counts < 0) return -1;
  if (counts) add_sizes(&r->sizes, sizes_of(st));
  return 0;
}

static void free_walk(removal_t *r) {
  free(r->stack);
  r->stack = NULL;
  free(r->linked.slots);
  r->linked = (inode_set_t){ NULL, 0, 0 };
}

static char *join_path(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *out = malloc(a + b + 2);
  if (out == NULL) return NULL;
  memcpy(out, dir, a);
  out[a] = '/';
  memcpy(out + a + 1, name, b + 1);
  return out;
}

/* The path of `name` in the directory at `level` of the stack (NULL: that directory), built for a report. */
static char *path_in(removal_t *r, size_t level, const char *name) {
  size_t length = strlen(r->root) + (name == NULL ? 0 : strlen(name) + 1);
  for (size_t i = 1; i <= level; i++) length += strlen(r->stack[i].name) + 1;
  char *out = malloc(length + 1);
  if (out == NULL) return NULL;
  char *at = stpcpy(out, r->root);
  for (size_t i = 1; i <= level; i++) {
    *at++ = '/';
    at = stpcpy(at, r->stack[i].name);
  }
  if (name != NULL) {
    *at++ = '/';
    stpcpy(at, name);
  }
  return out;
}

/* Record the first failure: errno, the syscall and the path it was about. Always returns -1. */
static int fail(removal_t *r, int error, const char *syscall, const char *dir, const char *name) {
  r->error = error;
  r->syscall = syscall;
  r->error_path = name == NULL ? strdup(dir) : join_path(dir, name);
  return -1;
}

/* `fail` about `name` in the directory at `level` of the stack (NULL: that directory). Always -1. */
static int fail_in(removal_t *r, int error, const char *syscall, size_t level, const char *name) {
  r->error = error;
  r->syscall = syscall;
  r->error_path = path_in(r, level, name);
  return -1;
}

#ifdef __linux__
/* The kernel's getdents64 record (glibc declares no wrapper before 2.30). */
struct linux_dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};
#endif

/*
 * The entries of a directory from its descriptor's offset on (the start, for one a walk just opened), read
 * with getdents64 straight from the descriptor: no dup, fdopendir, rewind and close per directory as
 * read_listing needs for a descriptor one keeps using (BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors"). Elsewhere read_listing
 * (always from the start). 0 or errno.
 */
static int read_fresh_listing(int fd, listing_t *out, size_t limit) {
#ifdef __linux__
  char buffer[32768];
  listing_builder_t b;
  if (builder_init(&b) != 0) return ENOMEM;
  for (;;) {
    long n = syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (n < 0) {
      int error = errno;
      free_listing(&b.l);
      return error;
    }
    if (n == 0) break;
    for (long offset = 0; offset < n;) {
      struct linux_dirent64 *entry = (struct linux_dirent64 *)(buffer + offset);
      offset += entry->d_reclen;
      if (builder_add(&b, entry->d_name, entry->d_type, (long long)entry->d_off) != 0) return ENOMEM;
      if (limit != 0 && b.l.count > limit) {
        free_listing(&b.l);
        return E2BIG;
      }
    }
  }
  *out = b.l;
  return 0;
#else
  int error = read_listing(fd, out);
  if (error == 0 && limit != 0 && out->count > limit) {
    free_listing(out);
    return E2BIG;
  }
  return error;
#endif
}

/*
 * List a directory a walk just opened (`name` in the directory at `level`). 0; 1 when it was removed
 * meanwhile (getdents answers ENOENT on a directory rmdir'd after its open, e.g. by a concurrent `rm -rf`:
 * the removal goes on without it and without an rmdir of whatever may have taken its name since, the
 * measure counts it as the empty entry it was, both as the portable walk does) or when the calling thread's
 * measure meets a listing longer than its `listing_limit` (`over`; removals have none); either way the
 * descriptor is closed. -1 on failure (recorded, closed).
 */
static int list_opened(removal_t *r, int fd, size_t level, const char *name, listing_t *out) {
  int error = read_fresh_listing(fd, out, r->listing_limit);
  if (error == 0) return 0;
  close(fd);
  if (error == ENOENT) return 1;
  if (error == E2BIG) {
    r->over = 1;
    return 1;
  }
  return fail_in(r, error, "readdir", level, name);
}

/*
 * The opened root of a walk: its identity (children are compared with its device, once per walk, not per
 * directory) and its listing. 0 to walk on; otherwise it stopped (a failure recorded, the root gone since
 * its open, or over) and the descriptor is closed.
 */
static int start_at_root(removal_t *r, int fd, dev_t *dev, ino_t *ino, sizes_t *own, listing_t *entries) {
  struct stat opened;
  if (fstat(fd, &opened) != 0) {
    fail(r, errno, "fstat", r->root, NULL);
    close(fd);
    return -1;
  }
  *dev = opened.st_dev;
  *ino = opened.st_ino;
  *own = sizes_of(&opened);
  return list_opened(r, fd, 0, NULL, entries);
}

static void drop_frame(frame_t *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  free(f->name);
  f->name = NULL;
  free_listing(&f->entries);
}

/* A directory leaves the window: it keeps where its listing goes on (after the entry last visited), no more. */
static void leave_window(frame_t *f) {
  if (f->index > 0) {
    f->offset = f->entries.next[f->index - 1];
    f->skipped += f->index;
  }
  free_listing(&f->entries);
  f->index = 0;
  close(f->fd);
  f->fd = -1;
}

/*
 * Push a directory whose descriptor is open and listed; takes ownership of all of it. Deeper than the
 * window, the shallowest directory held leaves it. 0, or -1 (ENOMEM).
 */
static int push(removal_t *r, frame_t frame) {
  if (r->depth == r->capacity) {
    size_t capacity = r->capacity == 0 ? 16 : r->capacity * 2;
    frame_t *more = realloc(r->stack, capacity * sizeof *more);
    if (more == NULL) {
      drop_frame(&frame);
      return fail(r, ENOMEM, r->walk, r->root, NULL);
    }
    r->stack = more;
    r->capacity = capacity;
  }
  r->stack[r->depth++] = frame;
  if (r->depth - r->low > WALK_WINDOW) leave_window(&r->stack[r->low++]);
  return 0;
}

/*
 * List the rest of the directory at `level` (its descriptor open) from where its listing goes on: its
 * `offset` (Linux; elsewhere from the start, less the `skipped` entries). One removed meanwhile lists as
 * empty, as a vanished one does. 0 (`over` may be set: the calling thread's listing limit), or -1 (recorded).
 */
static int relist(removal_t *r, size_t level) {
  frame_t *f = &r->stack[level];
  free_listing(&f->entries);
  f->index = 0;
#ifdef __linux__
  if (lseek(f->fd, (off_t)f->offset, SEEK_SET) < 0) return fail_in(r, errno, "lseek", level, NULL);
#endif
  int error = read_fresh_listing(f->fd, &f->entries, r->listing_limit);
  if (error == E2BIG) r->over = 1;
  if (error == ENOENT || error == E2BIG) return 0;
  if (error != 0) return fail_in(r, error, "readdir", level, NULL);
#ifndef __linux__
  drop_first(&f->entries, f->skipped);
#endif
  return 0;
}

/*
 * Back up from a directory just finished (`child_fd`, still open) to its parent, the new top, which had
 * left the window: re-open it as the child's "..", go on only if it is the directory left, and list the rest
 * of it. 0, or -1 (recorded: ESTALE "reopen" when ".." is another directory now).
 */
static int reenter(removal_t *r, int child_fd) {
  size_t level = r->depth - 1;
  frame_t *f = &r->stack[level];
  int fd = openat(child_fd, "..", DIR_FLAGS);
  if (fd < 0) return fail_in(r, errno, "open", level, NULL);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return fail_in(r, error, "fstat", level, NULL);
  }
  if (st.st_dev != f->dev || st.st_ino != f->ino) {
    close(fd);
    return fail_in(r, ESTALE, "reopen", level, NULL);
  }
  f->fd = fd;
  f->resumed = 1;
  r->low = level;
  return relist(r, level);
}

/*
 * Leave the top directory, every entry of it visited: it is popped (its descriptor still open, the caller's
 * to close) into `done`, and its parent, if it had left the window, re-entered. 0, or -1 (recorded; `done`
 * is dropped).
 */
static int pop(removal_t *r, frame_t *done) {
  *done = r->stack[--r->depth];
  if (r->depth > 0 && r->stack[r->depth - 1].fd < 0 && reenter(r, done->fd) != 0) {
    drop_frame(done);
    return -1;
  }
  return 0;
}

/* Unlink `name` in the directory at `level`; counts it when this call removed it. 0, or -1 with the failure recorded. */
static int remove_entry(removal_t *r, size_t level, const char *name, int is_directory) {
  if (unlinkat(r->stack[level].fd, name, is_directory ? AT_REMOVEDIR : 0) == 0) {
    r->removed++;
    return 0;
  }
  if (errno == ENOENT) return 0;
  return fail_in(r, errno, is_directory ? "rmdir" : "unlink", level, name);
}

/*
 * A mount point inside the tree (`name` in the directory at `level`): never descended, never unlinked; it
 * and its parents stay, the walk goes on with the rest, and the removal fails with EXDEV naming the first
 * one met. 0, or -1 (ENOMEM).
 */
static int crossed_mount(removal_t *r, size_t level, const char *name) {
  r->stack[level].blocked = 1;
  r->complete = 0;
  if (r->mount_point != NULL) return 0;
  r->mount_point = path_in(r, level, name);
  return r->mount_point == NULL ? fail_in(r, ENOMEM, r->walk, level, name) : 0;
}

/* One step inside the top directory: its next entry, or its own removal once it is empty. 1 when done. */
static int step(removal_t *r) {
  size_t level = r->depth - 1;
  frame_t *top = &r->stack[level];
  for (;;) {
    while (top->index < top->entries.count) {
      if (r->removed >= r->max_entries) {
        r->complete = 0;
        return 1;
      }
      const char *name = top->entries.names[top->index];
      int type = top->entries.types[top->index++];
      struct stat st;
      int stated = 0;
      if (type == T_UNKNOWN) {
        if (fstatat(top->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
          if (errno == ENOENT) continue;
          return fail_in(r, errno, "lstat", level, name);
        }
        type = type_of_mode(st.st_mode);
        stated = 1;
      }
      if (type != T_DIRECTORY) {
        /* Its sizes count once this walk unlinks it (one gone meanwhile counts nothing; one whose lstat
           failed otherwise is unlinked uncounted, as the portable walk does). */
        if (!stated) stated = fstatat(top->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
        double before = r->removed;
        if (remove_entry(r, level, name, 0) != 0) return -1;
        if (r->removed > before && stated && count_entry(r, &st) != 0) return -1;
        continue;
      }
      ino_t ino = 0;
      sizes_t own = { 0, 0, 0 };
      int fd = openat(top->fd, name, DIR_FLAGS);
      if (fd < 0) {
        fd = -errno;
      } else {
        int other = other_device_than(top->dev, fd, &ino, &own);
        if (other != 0) {
          close(fd);
          fd = other > 0 ? -EXDEV : other;
        }
      }
      if (fd == -EXDEV) {
        if (crossed_mount(r, level, name) != 0) return -1;
        continue;
      }
      if (fd < 0) {
        /* Vanished, or swapped for a link or file since the listing: remove the entry itself. */
        if (fd == -ENOENT || fd == -ELOOP || fd == -ENOTDIR) {
          if (remove_entry(r, level, name, 0) != 0) return -1;
          continue;
        }
        return fail_in(r, -fd, "open", level, name);
      }
      listing_t entries;
      int listed = list_opened(r, fd, level, name, &entries);
      if (listed < 0) return -1;
      if (listed == 1) continue; /* gone since its open */
      if (entries.count == 0) {
        free_listing(&entries);
        close(fd);
        double before = r->removed;
        if (remove_entry(r, level, name, 1) != 0) return -1;
        if (r->removed > before) add_sizes(&r->sizes, own);
        continue;
      }
      double depth = top->depth + 1;
      if (depth + 1 > r->max_depth) {
        free_listing(&entries);
        close(fd);
        top->blocked = 1;
        r->complete = 0;
        continue;
      }
      frame_t child = { .fd = fd, .dev = top->dev, .ino = ino, .name = strdup(name), .entries = entries, .depth = depth, .own = own };
      if (child.name == NULL) {
        drop_frame(&child);
        return fail_in(r, ENOMEM, r->walk, level, name);
      }
      return push(r, child); /* continue in the child */
    }
    /* Every entry visited. One whose listing was continued after a re-open is listed whole once more ("Depth"). */
    if (!top->resumed || top->blocked) break;
    top->resumed = 0;
    top->offset = 0;
    top->skipped = 0;
    if (relist(r, level) != 0) return -1;
    if (top->entries.count == 0) break;
  }
  /* Close the top directory, then remove it from its parent. */
  frame_t done;
  if (pop(r, &done) != 0) return -1;
  close(done.fd);
  done.fd = -1;
  int result = 0;
  frame_t *parent = r->depth == 0 ? NULL : &r->stack[r->depth - 1];
  if (done.blocked) {
    if (parent != NULL) parent->blocked = 1;
  } else if (parent == NULL) {
    /* The root is not counted against the budget; its sizes are, as du counts them. */
    if (rmdir(r->root) == 0) add_sizes(&r->sizes, done.own);
    else if (errno != ENOENT) result = fail(r, errno, "rmdir", r->root, NULL);
  } else if (r->removed >= r->max_entries) {
    r->complete = 0;
    result = 1;
  } else {
    double before = r->removed;
    result = remove_entry(r, r->depth - 1, done.name, 1);
    if (result == 0 && r->removed > before) add_sizes(&r->sizes, done.own);
  }
  drop_frame(&done);
  if (result != 0) return result;
  return r->depth == 0 ? 1 : 0;
}

/*
 * A walk from its opened, listed root (it takes ownership of both): `step` until it says done, then every
 * frame still open is dropped (a failure or budget stop leaves some).
 */
static void walk_from(removal_t *r, int fd, dev_t dev, ino_t ino, sizes_t own, listing_t entries, int (*step)(removal_t *)) {
  frame_t root = { .fd = fd, .dev = dev, .ino = ino, .entries = entries, .own = own };
  if (push(r, root) != 0) return;
  while (step(r) == 0) {
    /* one entry, or one finished directory, per step */
  }
  while (r->depth > 0) drop_frame(&r->stack[--r->depth]);
}

static void run_removal(removal_t *r) {
  r->complete = 1;
  struct stat st;
  if (lstat(r->root, &st) != 0) {
    if (errno != ENOENT) fail(r, errno, "lstat", r->root, NULL);
    return;
  }
  int fd = S_ISDIR(st.st_mode) ? open(r->root, DIR_FLAGS) : -1;
  if (fd < 0) {
    if (S_ISDIR(st.st_mode) && errno == ENOENT) return;
    if (S_ISDIR(st.st_mode) && errno != ELOOP && errno != ENOTDIR) {
      fail(r, errno, "open", r->root, NULL);
      return;
    }
    /* A link or file root: unlink the entry itself (never a link's target). The root is not counted
       as an entry; its sizes are, as its measure counts them. */
    if (unlink(r->root) == 0) {
      r->sizes = sizes_of(&st);
    } else if (errno != ENOENT) {
      fail(r, errno, "unlink", r->root, NULL);
    }
    return;
  }
  dev_t dev;
  ino_t ino;
  sizes_t own;
  listing_t entries;
  if (start_at_root(r, fd, &dev, &ino, &own, &entries) != 0) return; /* failed (recorded), or gone: nothing left to remove */
  if (r->max_depth < 1 && entries.count > 0) {
    free_listing(&entries);
    close(fd);
    r->complete = 0;
    return;
  }
  walk_from(r, fd, dev, ino, own, entries, step);
}

/* ---------------------------------------------------------------------------------------------------------
 * measureTree: the measuring walk whole in C (README "Layers", Node; BENCHMARKS.md "Scan: the measuring walk in C"): the budgets
 * and answers of the portable walk (pathWalk.ts), in readdir order (it sorts by name, so an entry budget may
 * cut other entries). Before, JavaScript drove these syscalls one native call per entry (fdWalk.ts: half a
 * no-op prune's CPU). Pre-order, depth first; every entry counts once (the root does not), and its sizes
 * count as du counts them ("Sizes": the root's too, a directory's from its open descriptor, an inode of
 * several links once); a vanished entry counts nothing; a directory swapped for a link or file since the
 * listing is counted as an entry without sizes, not descended, and one removed before it was listed counts
 * as the entry it was (empty); a mount point is counted as an entry, its sizes not (they are another file
 * system's), never descended,
 * and makes the measure incomplete, as do a directory deeper than `maxDepth` with entries and the entry
 * budget. Any depth within the window's descriptors ("Depth" above). The walk reuses removal_t: `removed`
 * counts the entries visited, `sizes` their sizes.
 */

static napi_value string_value(napi_env env, const char *text);

static long long monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One step inside the top directory: its next entry, or its close once every entry is visited. 1 when done. */
static int measure_step(removal_t *r) {
  size_t level = r->depth - 1;
  frame_t *top = &r->stack[level];
  while (top->index < top->entries.count) {
    if (r->removed >= r->max_entries) {
      r->complete = 0;
      return 1;
    }
    if (r->deadline_ns != 0 && monotonic_ns() > r->deadline_ns) {
      r->over = 1;
      return 1;
    }
    if (r->cancel != NULL && __atomic_load_n(r->cancel, __ATOMIC_RELAXED) != 0) return fail(r, ECANCELED, r->walk, r->root, NULL);
    const char *name = top->entries.names[top->index];
    int type = top->entries.types[top->index++];
    if (type != T_DIRECTORY) {
      /* Files, links and the rest are lstat'ed for their sizes (a directory's come from its descriptor). */
      struct stat st;
      if (fstatat(top->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue; /* removed while we walked */
        return fail_in(r, errno, "lstat", level, name);
      }
      type = type_of_mode(st.st_mode);
      if (type != T_DIRECTORY && count_entry(r, &st) != 0) return -1;
    }
    r->removed++;
    if (type != T_DIRECTORY) continue;
    int fd = openat(top->fd, name, DIR_FLAGS);
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) continue;
      return fail_in(r, errno, "open", level, name);
    }
    ino_t ino = 0;
    sizes_t own;
    int other = other_device_than(top->dev, fd, &ino, &own);
    if (other != 0) {
      close(fd);
      if (other < 0) return fail_in(r, -other, "open", level, name);
      r->complete = 0; /* a mount point: its contents are not counted, the measure is a lower bound */
      continue;
    }
    add_sizes(&r->sizes, own);
    listing_t entries;
    int listed = list_opened(r, fd, level, name, &entries);
    if (listed < 0) return -1;
    if (r->over) return 1;
    if (listed > 0) continue; /* removed since its open: counted as the (empty) entry it was */
    double depth = top->depth + 1;
    if (entries.count == 0 || depth + 1 > r->max_depth) {
      /* Only a non-empty directory left unopened makes the measure a lower bound. */
      if (entries.count > 0) r->complete = 0;
      free_listing(&entries);
      close(fd);
      continue;
    }
    frame_t child = { .fd = fd, .dev = top->dev, .ino = ino, .name = strdup(name), .entries = entries, .depth = depth };
    if (child.name == NULL) {
      drop_frame(&child);
      return fail_in(r, ENOMEM, r->walk, level, name);
    }
    return push(r, child); /* continue in the child */
  }
  frame_t done;
  if (pop(r, &done) != 0) return -1;
  drop_frame(&done);
  if (r->over) return 1;
  return r->depth == 0 ? 1 : 0;
}

static void measure_opened(removal_t *r, int fd);

static void run_measure(removal_t *r) {
  r->complete = 1;
  struct stat st;
  if (lstat(r->root, &st) != 0) {
    fail(r, errno, "lstat", r->root, NULL);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    /* A file, link or special file root measures itself (never a link's target), as du does. */
    r->sizes = sizes_of(&st);
    return;
  }
  /* The calling thread's pass does not list a root whose size says it holds more names than it may list
     (64 bytes a name is more than ext4, XFS, btrfs or tmpfs take for a short one): the first getdents of a
     directory of thousands of runs was most of what that pass cost a view's main thread, before it stopped
     at its limit and the thread pool listed it again. Where it runs, never what it answers. */
  if (r->listing_limit != 0 && (double)st.st_size > (double)r->listing_limit * 64) {
    r->over = 1;
    return;
  }
  int fd = open(r->root, DIR_FLAGS);
  if (fd < 0) {
    /* Vanished, or became a link or file since its lstat: nothing to measure. */
    if (errno != ENOENT && errno != ELOOP && errno != ENOTDIR) fail(r, errno, "open", r->root, NULL);
    return;
  }
  measure_opened(r, fd);
}

/* The measure of the directory `r->root` from its open descriptor (taken: closed before it returns). */
static void measure_opened(removal_t *r, int fd) {
  r->complete = 1;
  dev_t dev;
  ino_t ino;
  sizes_t own;
  listing_t entries;
  int started = start_at_root(r, fd, &dev, &ino, &own, &entries);
  if (started < 0) return; /* failed */
  add_sizes(&r->sizes, own);
  if (started > 0) return; /* removed meanwhile (the empty directory it was), or over */
  if (r->max_depth < 1 || entries.count == 0) {
    if (entries.count > 0) r->complete = 0;
    free_listing(&entries);
    close(fd);
    return;
  }
  walk_from(r, fd, dev, ino, own, entries, measure_step);
}

/*
 * measureTreeSync(path, maxEntries, maxDepth, cap, maxMs, out): the measure on the calling thread, for the
 * many small trees a prune measures (no thread-pool round trip each). It visits at most `cap` entries, lists
 * no directory of more than `cap` names and visits no entry after `maxMs` milliseconds: 0 with [entries,
 * disk usage, complete, apparent size, file bytes] in the Float64Array `out` ("Sizes"); 1 when it stopped at one of those limits below `maxEntries`
 * (a big tree, or a slow disk: measure it with measureTree, off the event loop); [errno, syscall, path] on
 * failure; a negative errno for bad arguments.
 */
static napi_value measure_tree_sync(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char path[NAME_MAX_BYTES];
  double max_entries, max_depth, cap, max_ms;
  napi_typedarray_type kind;
  size_t length;
  void *data;
  if (argc < 6) return number(env, -EINVAL);
  int path_error = path_arg(env, argv[0], path, sizeof path);
  if (path_error != 0) return number(env, path_error);
  if (napi_get_value_double(env, argv[1], &max_entries) != napi_ok ||
      napi_get_value_double(env, argv[2], &max_depth) != napi_ok ||
      napi_get_value_double(env, argv[3], &cap) != napi_ok || !isfinite(cap) || cap < 1 ||
      napi_get_value_double(env, argv[4], &max_ms) != napi_ok || !isfinite(max_ms) || max_ms <= 0 ||
      napi_get_typedarray_info(env, argv[5], &kind, &length, &data, NULL, NULL) != napi_ok ||
      kind != napi_float64_array || length < 5) {
    return number(env, -EINVAL);
  }
  removal_t r = { 0 };
  r.root = path;
  r.walk = "measureTree";
  r.max_entries = cap < max_entries ? cap : max_entries;
  r.max_depth = max_depth;
  r.listing_limit = (size_t)cap;
  r.deadline_ns = monotonic_ns() + (long long)(max_ms * 1e6);
  run_measure(&r);
  free_walk(&r);
  napi_value answer;
  if (r.error != 0) {
    napi_create_array_with_length(env, 3, &answer);
    napi_set_element(env, answer, 0, number(env, -r.error));
    napi_set_element(env, answer, 1, string_value(env, r.syscall));
    napi_set_element(env, answer, 2, string_value(env, r.error_path));
    free(r.error_path);
    return answer;
  }
  if (r.over || (!r.complete && cap < max_entries && r.removed >= cap)) return number(env, 1);
  double *out = data;
  out[0] = r.removed;
  out[1] = r.sizes.disk;
  out[2] = r.complete;
  out[3] = r.sizes.apparent;
  out[4] = r.sizes.content;
  return number(env, 0);
}

static void measure_execute(napi_env env, void *data) {
  (void)env;
  run_measure(data);
}

static void removal_execute(napi_env env, void *data) {
  (void)env;
  run_removal(data);
}

static napi_value string_value(napi_env env, const char *text) {
  napi_value out;
  napi_create_string_utf8(env, text == NULL ? "" : text, NAPI_AUTO_LENGTH, &out);
  return out;
}

/*
 * Back on the event loop: callback(0, entries, complete, disk, apparent, content) (a removal: the entries it
 * removed and their sizes, "Sizes") or callback(-errno, syscall, path, 0, 0, 0); a removal that met a mount
 * point (and failed no other way) answers (-EXDEV, "mount", mountPoint, disk, apparent, content).
 */
#define WALK_ANSWERS 6
/* One walk's answers (above) into out[0..5]; a cancelled work item answers ECANCELED. */
static void removal_answer(napi_env env, napi_status status, removal_t *r, napi_value *out) {
  if (status != napi_ok && r->error == 0) fail(r, ECANCELED, r->walk, r->root, NULL);
  sizes_t sizes = r->error != 0 && r->mount_point == NULL ? (sizes_t){ 0, 0, 0 } : r->sizes;
  if (r->error == 0 && r->mount_point != NULL) {
    out[0] = number(env, -EXDEV);
    out[1] = string_value(env, "mount");
    out[2] = string_value(env, r->mount_point);
  } else if (r->error != 0) {
    out[0] = number(env, -r->error);
    out[1] = string_value(env, r->syscall);
    out[2] = string_value(env, r->error_path);
    sizes = (sizes_t){ 0, 0, 0 };
  } else {
    out[0] = number(env, 0);
    out[1] = number(env, r->removed);
    napi_get_boolean(env, r->complete, &out[2]);
  }
  out[3] = number(env, sizes.disk);
  out[4] = number(env, sizes.apparent);
  out[5] = number(env, sizes.content);
}

static void removal_complete(napi_env env, napi_status status, void *data) {
  removal_t *r = data;
  napi_value callback, global, argv[WALK_ANSWERS];
  napi_get_reference_value(env, r->callback, &callback);
  napi_get_global(env, &global);
  removal_answer(env, status, r, argv);
  napi_call_function(env, global, callback, WALK_ANSWERS, argv, NULL);
  napi_delete_reference(env, r->callback);
  if (r->cancel_ref != NULL) napi_delete_reference(env, r->cancel_ref);
  napi_delete_async_work(env, r->work);
  free_walk(r);
  free(r->error_path);
  free(r->mount_point);
  free(r->root);
  free(r);
}

/*
 * (path, maxEntries, maxDepth, callback[, cancel]): queues one walk (`execute`) whose answer
 * removal_complete gives; `cancel`, an Int32Array, is the measure's flag (a measure stops at the next entry
 * once its first element is not 0, answering ECANCELED).
 */
static napi_value queue_walk(napi_env env, napi_callback_info info, napi_async_execute_callback execute, const char *walk, const char *resource) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char path[NAME_MAX_BYTES];
  double max_entries, max_depth;
  napi_valuetype callback_type;
  if (argc < 4) return number(env, -EINVAL);
  int path_error = path_arg(env, argv[0], path, sizeof path);
  if (path_error != 0) return number(env, path_error);
  if (napi_get_value_double(env, argv[1], &max_entries) != napi_ok ||
      napi_get_value_double(env, argv[2], &max_depth) != napi_ok ||
      napi_typeof(env, argv[3], &callback_type) != napi_ok || callback_type != napi_function) {
    return number(env, -EINVAL);
  }
  int32_t *cancel = NULL;
  napi_valuetype cancel_type = napi_undefined;
  if (argc >= 5 && napi_typeof(env, argv[4], &cancel_type) == napi_ok && cancel_type != napi_undefined) {
    napi_typedarray_type kind;
    size_t length;
    void *data;
    if (napi_get_typedarray_info(env, argv[4], &kind, &length, &data, NULL, NULL) != napi_ok || kind != napi_int32_array || length < 1) {
      return number(env, -EINVAL);
    }
    cancel = data;
  }
  removal_t *r = calloc(1, sizeof *r);
  if (r == NULL) return number(env, -ENOMEM);
  r->walk = walk;
  r->root = strdup(path);
  r->max_entries = max_entries;
  r->max_depth = max_depth;
  napi_value name;
  napi_create_string_utf8(env, resource, NAPI_AUTO_LENGTH, &name);
  if (r->root == NULL || napi_create_reference(env, argv[3], 1, &r->callback) != napi_ok) {
    free(r->root);
    free(r);
    return number(env, -ENOMEM);
  }
  /* The flag's buffer stays alive while the walk may read it: the walk holds a reference until it answers. */
  if (cancel != NULL && napi_create_reference(env, argv[4], 1, &r->cancel_ref) != napi_ok) {
    napi_delete_reference(env, r->callback);
    free(r->root);
    free(r);
    return number(env, -ENOMEM);
  }
  r->cancel = cancel;
  if (napi_create_async_work(env, NULL, name, execute, removal_complete, r, &r->work) != napi_ok ||
      napi_queue_async_work(env, r->work) != napi_ok) {
    if (r->work != NULL) napi_delete_async_work(env, r->work);
    napi_delete_reference(env, r->callback);
    if (r->cancel_ref != NULL) napi_delete_reference(env, r->cancel_ref);
    free(r->root);
    free(r);
    return number(env, -ENOMEM);
  }
  return number(env, 0);
}

/* removeTree(path, maxEntries, maxDepth, callback): queues the removal; 0, or -EINVAL for bad arguments. */
static napi_value remove_tree(napi_env env, napi_callback_info info) {
  return queue_walk(env, info, removal_execute, "removeTree", "fsat.removeTree");
}

/*
 * measureTree(path, maxEntries, maxDepth, callback[, cancel]): queues the measure on the thread pool; 0, or
 * -EINVAL. The callback gets (0, entries, complete, disk, apparent, content) or (-errno, syscall, path, 0, 0,
 * 0); once `cancel[0]` (an Int32Array) is set, the walk stops at its next entry and answers (-ECANCELED,
 * "measureTree", path, 0, 0, 0).
 */
static napi_value measure_tree(napi_env env, napi_callback_info info) {
  return queue_walk(env, info, measure_execute, "measureTree", "fsat.measureTree");
}

/* ---------------------------------------------------------------------------------------------------------
 * removeTrees: several removal walks, one after the other, in one piece of thread-pool work (BENCHMARKS.md "Prune: deletion in C, batched, and cheaper errors"). A
 * prune queues its deletions faster than the disk takes them; handing the waiting ones over together costs
 * one async work, one thread wake-up and one return to the event loop per batch instead of per run (each
 * of those was ~60-90 µs of main-thread CPU on a loaded machine). Each walk is exactly removeTree's.
 */

typedef struct {
  size_t count;
  removal_t *items;   /* one per root, in order; only their walk fields are used */
  napi_async_work work;
  napi_ref callback;
} removal_batch_t;

static void batch_execute(napi_env env, void *data) {
  (void)env;
  removal_batch_t *b = data;
  /* An item that failed already (a path too long) answers that failure; the others walk as if alone. */
  for (size_t i = 0; i < b->count; i++) {
    if (b->items[i].error == 0) run_removal(&b->items[i]);
  }
}

static void free_batch(napi_env env, removal_batch_t *b) {
  for (size_t i = 0; i < b->count; i++) {
    free_walk(&b->items[i]);
    free(b->items[i].error_path);
    free(b->items[i].mount_point);
    free(b->items[i].root);
  }
  free(b->items);
  if (b->callback != NULL) napi_delete_reference(env, b->callback);
  free(b);
}

/* Back on the event loop: callback(index, ...removeTree's answers) once per root, in order. */
static void batch_complete(napi_env env, napi_status status, void *data) {
  removal_batch_t *b = data;
  napi_value callback, global, argv[WALK_ANSWERS + 1];
  napi_get_reference_value(env, b->callback, &callback);
  napi_get_global(env, &global);
  for (size_t i = 0; i < b->count; i++) {
    argv[0] = number(env, (double)i);
    removal_answer(env, status, &b->items[i], argv + 1);
    napi_call_function(env, global, callback, WALK_ANSWERS + 1, argv, NULL);
  }
  napi_delete_async_work(env, b->work);
  free_batch(env, b);
}

/*
 * removeTrees(paths, maxEntries, maxDepths, callback): queues the walks of `paths` (arrays of one length,
 * the budgets per root) as one piece of work; 0, or -EINVAL for bad arguments (and no callback).
 */
static napi_value remove_trees(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t count = 0, entries_count = 0, depths_count = 0;
  napi_valuetype callback_type;
  if (argc < 4 || napi_get_array_length(env, argv[0], &count) != napi_ok ||
      napi_get_array_length(env, argv[1], &entries_count) != napi_ok ||
      napi_get_array_length(env, argv[2], &depths_count) != napi_ok || count == 0 ||
      entries_count != count || depths_count != count ||
      napi_typeof(env, argv[3], &callback_type) != napi_ok || callback_type != napi_function) {
    return number(env, -EINVAL);
  }
  removal_batch_t *b = calloc(1, sizeof *b);
  if (b == NULL) return number(env, -ENOMEM);
  b->items = calloc(count, sizeof *b->items);
  if (b->items == NULL) {
    free(b);
    return number(env, -ENOMEM);
  }
  b->count = count;
  for (uint32_t i = 0; i < count; i++) {
    napi_value path_value, entries_value, depth_value;
    char path[NAME_MAX_BYTES];
    removal_t *r = &b->items[i];
    int path_error = napi_get_element(env, argv[0], i, &path_value) != napi_ok ? -EINVAL : path_arg(env, path_value, path, sizeof path);
    if (path_error == -ENAMETOOLONG) {
      /* That walk alone fails, as removeTree would for it (ENAMETOOLONG, naming the path); not the batch. */
      r->root = path_arg_copy(env, path_value);
      if (r->root == NULL) {
        free_batch(env, b);
        return number(env, -ENOMEM);
      }
      r->walk = "removeTree";
      fail(r, ENAMETOOLONG, "removeTree", r->root, NULL);
      if (r->error_path == NULL) {
        free_batch(env, b);
        return number(env, -ENOMEM);
      }
    }
    if (path_error == -EINVAL ||
        napi_get_element(env, argv[1], i, &entries_value) != napi_ok ||
        napi_get_value_double(env, entries_value, &r->max_entries) != napi_ok ||
        napi_get_element(env, argv[2], i, &depth_value) != napi_ok ||
        napi_get_value_double(env, depth_value, &r->max_depth) != napi_ok) {
      free_batch(env, b);
      return number(env, -EINVAL);
    }
    if (r->root != NULL) continue; /* failed above */
    r->walk = "removeTree";
    r->root = strdup(path);
    if (r->root == NULL) {
      free_batch(env, b);
      return number(env, -ENOMEM);
    }
  }
  napi_value name;
  napi_create_string_utf8(env, "fsat.removeTrees", NAPI_AUTO_LENGTH, &name);
  if (napi_create_reference(env, argv[3], 1, &b->callback) != napi_ok) {
    b->callback = NULL;
    free_batch(env, b);
    return number(env, -ENOMEM);
  }
  if (napi_create_async_work(env, NULL, name, batch_execute, batch_complete, b, &b->work) != napi_ok) {
    free_batch(env, b);
    return number(env, -ENOMEM);
  }
  if (napi_queue_async_work(env, b->work) != napi_ok) {
    napi_delete_async_work(env, b->work);
    free_batch(env, b);
    return number(env, -ENOMEM);
  }
  return number(env, 0);
}

/*
 * syncFs(path, callback): make every write on the file system holding the directory `path` durable
 * (syncfs(2), Linux; sync(2) elsewhere), on the libuv thread pool. A state snapshot calls it once, after its
 * files and before its manifest, instead of an fsync per file (src/services/StateBackups.ts). The callback
 * gets (0, "") or (-errno, syscall).
 */
typedef struct {
  napi_async_work work;
  napi_ref callback;
  char *path;
  int error;
  const char *syscall;
} sync_fs_t;

static void sync_fs_execute(napi_env env, void *data) {
  (void)env;
  sync_fs_t *s = data;
  int fd = open(s->path, DIR_FLAGS);
  if (fd < 0) {
    s->error = errno;
    s->syscall = "open";
    return;
  }
#ifdef __linux__
  if (syncfs(fd) != 0) {
    s->error = errno;
    s->syscall = "syncfs";
  }
#else
  sync();
#endif
  close(fd);
}

static void sync_fs_free(napi_env env, sync_fs_t *s) {
  if (s->work != NULL) napi_delete_async_work(env, s->work);
  if (s->callback != NULL) napi_delete_reference(env, s->callback);
  free(s->path);
  free(s);
}

static void sync_fs_complete(napi_env env, napi_status status, void *data) {
  sync_fs_t *s = data;
  napi_value callback, global, argv[2];
  napi_get_reference_value(env, s->callback, &callback);
  napi_get_global(env, &global);
  if (status != napi_ok && s->error == 0) {
    s->error = ECANCELED;
    s->syscall = "syncfs";
  }
  argv[0] = number(env, -s->error);
  argv[1] = string_value(env, s->error == 0 ? "" : s->syscall);
  napi_call_function(env, global, callback, 2, argv, NULL);
  sync_fs_free(env, s);
}

/* syncFs(path, callback): queues the sync; 0, or a negative errno (no callback then). */
static napi_value sync_fs(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char path[NAME_MAX_BYTES];
  napi_valuetype callback_type;
  if (argc < 2 || !string_arg(env, argv[0], path, sizeof path) ||
      napi_typeof(env, argv[1], &callback_type) != napi_ok || callback_type != napi_function) {
    return number(env, -EINVAL);
  }
  sync_fs_t *s = calloc(1, sizeof *s);
  if (s == NULL) return number(env, -ENOMEM);
  s->path = strdup(path);
  napi_value name;
  napi_create_string_utf8(env, "fsat.syncFs", NAPI_AUTO_LENGTH, &name);
  if (s->path == NULL || napi_create_reference(env, argv[1], 1, &s->callback) != napi_ok ||
      napi_create_async_work(env, NULL, name, sync_fs_execute, sync_fs_complete, s, &s->work) != napi_ok ||
      napi_queue_async_work(env, s->work) != napi_ok) {
    sync_fs_free(env, s);
    return number(env, -ENOMEM);
  }
  return number(env, 0);
}

/*
 * State snapshots (src/services/StateBackups.ts, through src/layers/node/snapshotCalls.ts): a directory's
 * entries with their lstat in one call, and a directory's unchanged files linked in one call, relative to
 * directory descriptors (no path resolved per file, no Stats object per file on the JavaScript side).
 */

/*
 * Doubles per entry in listInfo's stats: type, size, mode (permission bits), uid, ino, dev, nlink, mtimeMs,
 * blocks (allocated 512-byte units, st_blocks). Exported as `infoFields`: JavaScript reads as many.
 */
#define INFO_FIELDS 9

/*
 * mtime in milliseconds exactly as Node computes `Stats.mtimeMs` (sec * 1e3 + nsec / 1e6 in doubles), so a
 * record written from one is equal to a look through the other (the link decision compares them exactly).
 */
static double ms_of(struct timespec t) {
  volatile double whole = (double)t.tv_sec * 1000.0;
  volatile double part = (double)t.tv_nsec / 1000000.0;
  return whole + part;
}

typedef struct {
  char *names;   /* NUL-separated */
  size_t names_used, names_capacity;
  double *stats; /* INFO_FIELDS per entry */
  size_t count, capacity;
} info_listing_t;

static void free_info_listing(info_listing_t *l) {
  free(l->names);
  free(l->stats);
}

/* Append one entry; ENOMEM or 0. */
static int info_add(info_listing_t *l, const char *name, const struct stat *st) {
  size_t length = strlen(name) + 1;
  if (l->names_used + length > l->names_capacity) {
    size_t capacity = l->names_capacity * 2 + length + 256;
    char *more = realloc(l->names, capacity);
    if (more == NULL) return ENOMEM;
    l->names = more;
    l->names_capacity = capacity;
  }
  if (l->count == l->capacity) {
    size_t capacity = l->capacity * 2 + 16;
    double *more = realloc(l->stats, capacity * INFO_FIELDS * sizeof *more);
    if (more == NULL) return ENOMEM;
    l->stats = more;
    l->capacity = capacity;
  }
  memcpy(l->names + l->names_used, name, length);
  l->names_used += length;
  double *out = l->stats + l->count * INFO_FIELDS;
  out[0] = type_of_mode(st->st_mode);
  out[1] = (double)st->st_size;
  out[2] = (double)(st->st_mode & 07777);
  out[3] = (double)st->st_uid;
  out[4] = (double)st->st_ino;
  out[5] = (double)st->st_dev;
  out[6] = (double)st->st_nlink;
  out[7] = ms_of(st->st_mtim);
  out[8] = (double)st->st_blocks;
  l->count++;
  return 0;
}

/* Every entry of the directory at `path` (a final symlink refused: ELOOP) with its lstat; 0 or an errno. */
static int read_info_listing(const char *path, info_listing_t *out) {
  memset(out, 0, sizeof *out);
  int fd = open(path, DIR_FLAGS);
  if (fd < 0) return errno;
  DIR *dir = fdopendir(fd);
  if (dir == NULL) {
    int error = errno;
    close(fd);
    return error;
  }
  for (;;) {
    errno = 0;
    struct dirent *entry = readdir(dir);
    if (entry == NULL) {
      int error = errno;
      closedir(dir);
      if (error != 0) free_info_listing(out);
      return error;
    }
    const char *name = entry->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    struct stat st;
    if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue; /* gone between the listing and its lstat: as if a moment earlier */
      int error = errno;
      closedir(dir);
      free_info_listing(out);
      return error;
    }
    int error = info_add(out, name, &st);
    if (error != 0) {
      closedir(dir);
      free_info_listing(out);
      return error;
    }
  }
}

/*
 * listInfo(path): { names, stats } with INFO_FIELDS doubles per name in the Float64Array `stats` (listing
 * order, unsorted), or a negative errno. Never follows a final symlink (-ELOOP).
 */
static napi_value list_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char path[NAME_MAX_BYTES];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || !string_arg(env, argv[0], path, sizeof path)) return number(env, -EINVAL);
  info_listing_t l;
  int error = read_info_listing(path, &l);
  if (error != 0) return number(env, -error);
  napi_value result, names, buffer, stats;
  void *data = NULL;
  size_t bytes = l.count * INFO_FIELDS * sizeof(double);
  if (napi_create_object(env, &result) != napi_ok || napi_create_array_with_length(env, l.count, &names) != napi_ok ||
      napi_create_arraybuffer(env, bytes, &data, &buffer) != napi_ok ||
      napi_create_typedarray(env, napi_float64_array, l.count * INFO_FIELDS, buffer, 0, &stats) != napi_ok) {
    free_info_listing(&l);
    return number(env, -ENOMEM);
  }
  if (bytes > 0) memcpy(data, l.stats, bytes);
  const char *name = l.names;
  for (size_t i = 0; i < l.count; i++) {
    size_t length = strlen(name);
    napi_value js_name;
    napi_create_string_utf8(env, name, length, &js_name);
    napi_set_element(env, names, (uint32_t)i, js_name);
    name += length + 1;
  }
  free_info_listing(&l);
  napi_set_named_property(env, result, "names", names);
  napi_set_named_property(env, result, "stats", stats);
  return result;
}

/*
 * linkEach(fromDir, toDir, names, errnos): linkat(fromDir/name → toDir/name) for each name (never following
 * a final symlink, neither the directories' nor the names'), the directories opened once. Writes each
 * name's errno (0 when linked) into the Int32Array `errnos`; returns 0, or a negative errno when a directory
 * cannot be opened (nothing linked then).
 */
static napi_value link_each(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char from[NAME_MAX_BYTES], to[NAME_MAX_BYTES], name[NAME_MAX_BYTES];
  uint32_t count = 0;
  napi_typedarray_type kind;
  size_t length = 0;
  void *data = NULL;
  if (argc < 4 || !string_arg(env, argv[0], from, sizeof from) || !string_arg(env, argv[1], to, sizeof to) ||
      napi_get_array_length(env, argv[2], &count) != napi_ok ||
      napi_get_typedarray_info(env, argv[3], &kind, &length, &data, NULL, NULL) != napi_ok ||
      kind != napi_int32_array || length < count) {
    return number(env, -EINVAL);
  }
  int from_fd = open(from, DIR_FLAGS);
  if (from_fd < 0) return number(env, -errno);
  int to_fd = open(to, DIR_FLAGS);
  if (to_fd < 0) {
    int error = errno;
    close(from_fd);
    return number(env, -error);
  }
  int32_t *errnos = data;
  for (uint32_t i = 0; i < count; i++) {
    napi_value js_name;
    if (napi_get_element(env, argv[2], i, &js_name) != napi_ok || !string_arg(env, js_name, name, sizeof name)) {
      errnos[i] = EINVAL;
      continue;
    }
    errnos[i] = linkat(from_fd, name, to_fd, name, 0) == 0 ? 0 : errno;
  }
  close(from_fd);
  close(to_fd);
  return number(env, 0);
}

/*
 * exchange(a, b): renameat2(a, b, RENAME_EXCHANGE), the two names swap their entries in one step. A
 * conditional replace (replaceFileIfUnchanged in src/layers/NodeFileSystem.ts) swaps its new file in, then
 * checks the one swapped out: nothing is ever unlinked by the rename itself, so a file someone saved in
 * between can be put back. 0, or a negative errno (EINVAL or ENOTSUP where the file system cannot, ENOSYS
 * off Linux).
 */
static napi_value exchange(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  char a[NAME_MAX_BYTES], b[NAME_MAX_BYTES];
  if (argc < 2 || !string_arg(env, argv[0], a, sizeof a) || !string_arg(env, argv[1], b, sizeof b)) return number(env, -EINVAL);
#if defined(__linux__) && defined(SYS_renameat2)
  return number(env, syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */) == 0 ? 0 : -errno);
#else
  return number(env, -ENOSYS);
#endif
}

/*
 * seek(fd, offset, whence): lseek(2) with SEEK_DATA (whence 0) or SEEK_HOLE (whence 1), for copies and hashes
 * that keep a sparse file's holes (src/layers/node/sparse.ts; Node has no lseek). The offset found, or a
 * negative errno: -ENXIO when there is no data at or after `offset`, -ENOTSUP where the platform has neither.
 * It moves the descriptor's position: its callers read and write at explicit offsets only.
 */
static napi_value seek_extent(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd = -1, whence = -1;
  double offset = -1;
  if (argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_double(env, argv[1], &offset) != napi_ok ||
      napi_get_value_int32(env, argv[2], &whence) != napi_ok || fd < 0 || !(offset >= 0) || offset > 9007199254740991.0 ||
      (whence != 0 && whence != 1)) {
    return number(env, -EINVAL);
  }
#if defined(SEEK_DATA) && defined(SEEK_HOLE)
  off_t at = lseek(fd, (off_t)offset, whence == 0 ? SEEK_DATA : SEEK_HOLE);
  return number(env, at < 0 ? -errno : (double)at);
#else
  return number(env, -ENOTSUP);
#endif
}

/* ---------------------------------------------------------------------------------------------------------
 * readRuns: what a view reads of each run directory, in one pass per directory on the thread pool
 * (BENCHMARKS.md "Views"): the directory opened once (never through a link), then relative to it a file's
 * bytes (the manifest, capped), a subdirectory's names and types (`.leases/`) and, when asked, the measure
 * of the whole directory from the same descriptor. Each part answers what the single call would
 * (src/layers/node/runReads.ts turns them into the port's answers): readFile's checks (no link, a regular
 * file, the cap, read to EOF), readDirectory's (no link; its names and types) and measureTree's walk
 * (measure_opened). A directory that cannot be opened answers its open's errno for the file and the
 * listing (a link or a file there: ENOTDIR, never followed) and is measured as measureTree measures that
 * path (a link or file root measures itself).
 */
#define READ_RUNS_VERSION 2

/* A file part's answer beyond an errno: the kinds of refusal readFile words itself. */
enum { FILE_READ = 0, FILE_ERRNO = 1, FILE_IS_DIRECTORY = 2, FILE_NOT_REGULAR = 3, FILE_TOO_LARGE = 4, FILE_GREW = 5 };

typedef struct {
  char *dir;
  int file_kind;
  int file_error;
  const char *file_syscall;
  char *file_bytes;
  size_t file_length;
  double file_size;        /* its fstat size (FILE_TOO_LARGE) */
  int list_error;          /* 0, or the errno of the listing */
  int list_fallback;       /* a name JavaScript must read itself (not UTF-8, U+FFFD, an unknown type) */
  char *names;             /* '/'-separated (a name never holds one) */
  size_t names_length;
  char *types;             /* one digit per name (FsatType) */
  int measured;            /* the measure was asked for */
  int bad_path;            /* the path held a NUL: every part answers EINVAL, nothing is opened */
  removal_t measure;
} run_read_t;

typedef struct {
  size_t count;
  run_read_t *items;
  char *file_name;
  char *listing_name;
  double max_bytes;
  double max_entries;      /* < 0: no measure */
  double max_depth;
  napi_async_work work;
  napi_ref callback;
} run_batch_t;

/* Whether `name` is UTF-8 that JavaScript reads back as the same bytes, with no U+FFFD (osPath.ts rereads those as bytes). */
static int plain_utf8(const unsigned char *s) {
  while (*s) {
    if (*s < 0x80) {
      s++;
      continue;
    }
    int more = (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2 : (*s & 0xF8) == 0xF0 ? 3 : -1;
    if (more < 0 || (*s == 0xC0 || *s == 0xC1) || *s > 0xF4) return 0;
    unsigned int code = *s & (0x3F >> more);
    for (int i = 1; i <= more; i++) {
      if ((s[i] & 0xC0) != 0x80) return 0;
      code = (code << 6) | (s[i] & 0x3F);
    }
    if ((more == 2 && code < 0x800) || (more == 3 && (code < 0x10000 || code > 0x10FFFF)) || (code >= 0xD800 && code <= 0xDFFF) || code == 0xFFFD) return 0;
    s += more + 1;
  }
  return 1;
}

static void read_run_file(run_read_t *item, int dir_fd, const char *name, double max_bytes) {
  int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    item->file_kind = FILE_ERRNO;
    item->file_error = errno;
    item->file_syscall = "open";
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    item->file_kind = FILE_ERRNO;
    item->file_error = errno;
    item->file_syscall = "fstat";
  } else if (S_ISDIR(st.st_mode)) {
    item->file_kind = FILE_IS_DIRECTORY;
  } else if (!S_ISREG(st.st_mode)) {
    item->file_kind = FILE_NOT_REGULAR;
  } else if ((double)st.st_size > max_bytes) {
    item->file_kind = FILE_TOO_LARGE;
    item->file_size = (double)st.st_size;
  } else {
    /* To EOF, never past the cap: the file may grow between fstat and read (readFile's rule). */
    size_t capacity = (size_t)st.st_size + 1, total = 0;
    char *buffer = malloc(capacity);
    for (;;) {
      if (buffer == NULL) {
        item->file_kind = FILE_ERRNO;
        item->file_error = ENOMEM;
        item->file_syscall = "read";
        break;
      }
      if (total == capacity) {
        size_t grown = capacity * 2 > (size_t)max_bytes + 1 ? (size_t)max_bytes + 1 : capacity * 2;
        char *more = realloc(buffer, grown);
        if (more == NULL) {
          free(buffer);
          buffer = NULL;
          continue;
        }
        buffer = more;
        capacity = grown;
      }
      ssize_t n = read(fd, buffer + total, capacity - total);
      if (n < 0) {
        if (errno == EINTR) continue;
        item->file_kind = FILE_ERRNO;
        item->file_error = errno;
        item->file_syscall = "read";
        free(buffer);
        buffer = NULL;
        break;
      }
      if (n == 0) {
        item->file_kind = FILE_READ;
        item->file_bytes = buffer;
        item->file_length = total;
        buffer = NULL;
        break;
      }
      total += (size_t)n;
      if ((double)total > max_bytes) {
        item->file_kind = FILE_GREW;
        free(buffer);
        buffer = NULL;
        break;
      }
    }
  }
  close(fd);
}

static void read_run_listing(run_read_t *item, int dir_fd, const char *name) {
  int fd = openat(dir_fd, name, DIR_FLAGS);
  if (fd < 0) {
    /* A link (or a file) where the directory belongs is never listed through: ENOTDIR, as readDirectory says. */
    item->list_error = errno == ELOOP ? ENOTDIR : errno;
    return;
  }
  listing_t l;
  int error = read_fresh_listing(fd, &l, 0);
  close(fd);
  if (error != 0) {
    item->list_error = error;
    return;
  }
  size_t length = 0;
  for (size_t i = 0; i < l.count; i++) {
    if (l.types[i] == T_UNKNOWN || !plain_utf8((const unsigned char *)l.names[i])) item->list_fallback = 1;
    length += strlen(l.names[i]) + 1;
  }
  if (!item->list_fallback) {
    item->names = malloc(length + 1);
    item->types = malloc(l.count + 1);
    if (item->names == NULL || item->types == NULL) {
      item->list_fallback = 1; /* JavaScript lists it itself */
    } else {
      char *at = item->names;
      for (size_t i = 0; i < l.count; i++) {
        if (i > 0) *at++ = '/';
        at = stpcpy(at, l.names[i]);
        item->types[i] = (char)('0' + l.types[i]);
      }
      item->names_length = (size_t)(at - item->names);
      item->types[l.count] = '\0';
    }
  }
  free_listing(&l);
}

static void read_run(run_batch_t *b, run_read_t *item) {
  if (item->bad_path) {
    item->file_kind = FILE_ERRNO;
    item->file_error = EINVAL;
    item->file_syscall = "open";
    item->list_error = EINVAL;
    if (item->measured) fail(&item->measure, EINVAL, "open", item->dir, NULL);
    return;
  }
#ifdef O_PATH
  int fd = open(item->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
#else
  int fd = open(item->dir, DIR_FLAGS);
#endif
  if (fd < 0) {
    int error = errno == ELOOP ? ENOTDIR : errno;
    item->file_kind = FILE_ERRNO;
    item->file_error = error;
    item->file_syscall = "open";
    item->list_error = error;
    if (item->measured) run_measure(&item->measure);
    return;
  }
  read_run_file(item, fd, b->file_name, b->max_bytes);
  read_run_listing(item, fd, b->listing_name);
  if (item->measured) {
    /* measureTree's walk from this very directory (lstat'ed as a directory: it was opened as one). */
    item->measure.complete = 1;
    int walk_fd = openat(fd, ".", DIR_FLAGS);
    if (walk_fd < 0) {
      if (errno != ENOENT) fail(&item->measure, errno, "open", item->measure.root, NULL);
    } else {
      measure_opened(&item->measure, walk_fd);
    }
  }
  close(fd);
}

static void run_batch_execute(napi_env env, void *data) {
  (void)env;
  run_batch_t *b = data;
  for (size_t i = 0; i < b->count; i++) read_run(b, &b->items[i]);
}

static void free_run_batch(napi_env env, run_batch_t *b) {
  for (size_t i = 0; i < b->count; i++) {
    run_read_t *item = &b->items[i];
    free(item->dir);
    free(item->file_bytes);
    free(item->names);
    free(item->types);
    free_walk(&item->measure);
    free(item->measure.error_path);
    free(item->measure.mount_point);
  }
  free(b->items);
  free(b->file_name);
  free(b->listing_name);
  if (b->callback != NULL) napi_delete_reference(env, b->callback);
  free(b);
}

/*
 * Back on the event loop, the whole batch in one call (a call per directory, with its dozen values, cost more
 * than the directory's syscalls): callback(numbers, bytes, names, types, texts). `numbers`, a Float64Array
 * of RUN_FIELDS per directory: [fileAnswer, offset, length, listAnswer, names, measureAnswer, entries,
 * complete, disk, apparent, content]. fileAnswer is 0 with the file's bytes at bytes[offset, offset + length),
 * -errno (its syscall in texts[3i]), or 1..4 for readFile's own refusals (1 a directory, 2 not a regular file,
 * 3 over the cap with its size in `offset`, 4 grew past it). listAnswer is 0 with that many names next in
 * `names` ('/'-separated, every directory's in turn) and their FsatType digits next in `types`, 1 when
 * JavaScript must list it itself, or -errno. measureAnswer is 0 with the measure's numbers, -errno (its
 * syscall and path in texts[3i + 1], texts[3i + 2]), or 1 when none was asked. `texts` is undefined when no
 * part of the batch failed.
 */
#define RUN_FIELDS 11
static void run_batch_complete(napi_env env, napi_status status, void *data) {
  run_batch_t *b = data;
  napi_value callback, global, argv[5];
  napi_get_reference_value(env, b->callback, &callback);
  napi_get_global(env, &global);
  size_t total_bytes = 0, total_names = 0, total_types = 0, failures = 0;
  for (size_t i = 0; i < b->count; i++) {
    run_read_t *item = &b->items[i];
    if (status != napi_ok && item->measured && item->measure.error == 0) fail(&item->measure, ECANCELED, "readRuns", item->dir, NULL);
    if (item->file_kind == FILE_READ) total_bytes += item->file_length;
    if (item->list_error == 0 && !item->list_fallback && item->types != NULL && item->types[0] != '\0') {
      total_names += item->names_length + 1;
      total_types += strlen(item->types);
    }
    if (status != napi_ok || item->file_kind == FILE_ERRNO || (item->measured && item->measure.error != 0)) failures++;
  }
  void *numbers_data = NULL, *bytes_data = NULL;
  napi_value numbers_buffer;
  if (napi_create_arraybuffer(env, b->count * RUN_FIELDS * sizeof(double), &numbers_data, &numbers_buffer) != napi_ok ||
      napi_create_typedarray(env, napi_float64_array, b->count * RUN_FIELDS, numbers_buffer, 0, &argv[0]) != napi_ok ||
      napi_create_buffer(env, total_bytes, &bytes_data, &argv[1]) != napi_ok || numbers_data == NULL ||
      (total_bytes > 0 && bytes_data == NULL)) {
    /* No room for the answer: the callback gets no numbers, and JavaScript answers every part ENOMEM. */
    napi_value nothing, pending;
    bool thrown = false;
    if (napi_is_exception_pending(env, &thrown) == napi_ok && thrown) napi_get_and_clear_last_exception(env, &pending);
    napi_get_undefined(env, &nothing);
    napi_call_function(env, global, callback, 1, &nothing, NULL);
    napi_delete_async_work(env, b->work);
    free_run_batch(env, b);
    return;
  }
  char *names = malloc(total_names + 1), *types = malloc(total_types + 1);
  size_t names_at = 0, types_at = 0, bytes_at = 0;
  if (failures > 0) napi_create_array_with_length(env, b->count * 3, &argv[4]);
  else napi_get_undefined(env, &argv[4]);
  double *numbers = numbers_data;
  for (size_t i = 0; i < b->count; i++) {
    run_read_t *item = &b->items[i];
    double *out = numbers + i * RUN_FIELDS;
    memset(out, 0, RUN_FIELDS * sizeof *out);
    if (status != napi_ok) {
      out[0] = -ECANCELED;
      out[3] = -ECANCELED;
      napi_set_element(env, argv[4], (uint32_t)(3 * i), string_value(env, "readRuns"));
    } else if (item->file_kind == FILE_READ) {
      if (item->file_length > 0) memcpy((char *)bytes_data + bytes_at, item->file_bytes, item->file_length);
      out[1] = (double)bytes_at;
      out[2] = (double)item->file_length;
      bytes_at += item->file_length;
    } else if (item->file_kind == FILE_ERRNO) {
      out[0] = -item->file_error;
      napi_set_element(env, argv[4], (uint32_t)(3 * i), string_value(env, item->file_syscall));
    } else {
      out[0] = item->file_kind - 1;
      out[1] = item->file_size;
    }
    if (status != napi_ok) {
      /* answered above */
    } else if (item->list_error != 0) {
      out[3] = -item->list_error;
    } else if (item->list_fallback || names == NULL || types == NULL) {
      out[3] = 1;
    } else if (item->types != NULL && item->types[0] != '\0') {
      size_t count = strlen(item->types);
      if (names_at > 0) names[names_at++] = '/';
      memcpy(names + names_at, item->names, item->names_length);
      names_at += item->names_length;
      memcpy(types + types_at, item->types, count);
      types_at += count;
      out[4] = (double)count;
    }
    if (!item->measured) {
      out[5] = 1;
    } else if (item->measure.error != 0) {
      out[5] = -item->measure.error;
      napi_set_element(env, argv[4], (uint32_t)(3 * i + 1), string_value(env, item->measure.syscall));
      napi_set_element(env, argv[4], (uint32_t)(3 * i + 2), string_value(env, item->measure.error_path));
    } else {
      out[6] = item->measure.removed;
      out[7] = item->measure.complete;
      out[8] = item->measure.sizes.disk;
      out[9] = item->measure.sizes.apparent;
      out[10] = item->measure.sizes.content;
    }
  }
  if (napi_create_string_utf8(env, names == NULL ? "" : names, names == NULL ? 0 : names_at, &argv[2]) != napi_ok ||
      napi_create_string_utf8(env, types == NULL ? "" : types, types == NULL ? 0 : types_at, &argv[3]) != napi_ok) {
    /* More names than one string holds: every listing handed over is listed by JavaScript itself instead. */
    napi_value pending;
    bool thrown = false;
    if (napi_is_exception_pending(env, &thrown) == napi_ok && thrown) napi_get_and_clear_last_exception(env, &pending);
    for (size_t i = 0; i < b->count; i++) {
      double *out = numbers + i * RUN_FIELDS;
      if (out[3] == 0 && out[4] > 0) {
        out[3] = 1;
        out[4] = 0;
      }
    }
    napi_create_string_utf8(env, "", 0, &argv[2]);
    napi_create_string_utf8(env, "", 0, &argv[3]);
  }
  free(names);
  free(types);
  napi_call_function(env, global, callback, 5, argv, NULL);
  napi_delete_async_work(env, b->work);
  free_run_batch(env, b);
}

/*
 * readRuns(dirs, fileName, listingName, maxBytes, maxEntries, maxDepth, callback): queues the reads of `dirs`
 * (an array of paths, or one string of paths each ended by a NUL) as one piece of thread-pool work (a negative maxEntries: no measure); 0, or a negative errno for bad
 * arguments (and no callback). A directory path too long answers ENAMETOOLONG for its parts.
 */
static napi_value read_runs(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t count = 0;
  double max_bytes, max_entries, max_depth;
  napi_valuetype callback_type, dirs_type;
  char file_name[NAME_MAX_BYTES], listing_name[NAME_MAX_BYTES];
  /* The directories: an array of paths (strings or Buffers), or one string of UTF-8 paths each ended by a NUL
     (two napi calls for the batch instead of three per path: those were most of the main thread's share). */
  char *joined = NULL;
  size_t joined_length = 0;
  if (argc >= 1 && napi_typeof(env, argv[0], &dirs_type) == napi_ok && dirs_type == napi_string) {
    if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &joined_length) != napi_ok) return number(env, -EINVAL);
    joined = malloc(joined_length + 1);
    if (joined == NULL) return number(env, -ENOMEM);
    napi_get_value_string_utf8(env, argv[0], joined, joined_length + 1, &joined_length);
    for (size_t i = 0; i < joined_length; i++) count += joined[i] == '\0';
    if (joined_length == 0 || joined[joined_length - 1] != '\0') count = 0;
  } else if (argc < 1 || napi_get_array_length(env, argv[0], &count) != napi_ok) {
    count = 0;
  }
  if (argc < 7 || count == 0 ||
      path_arg(env, argv[1], file_name, sizeof file_name) != 0 || path_arg(env, argv[2], listing_name, sizeof listing_name) != 0 ||
      strchr(file_name, '/') != NULL || strchr(listing_name, '/') != NULL || file_name[0] == '\0' || listing_name[0] == '\0' ||
      napi_get_value_double(env, argv[3], &max_bytes) != napi_ok || !(max_bytes >= 0) ||
      napi_get_value_double(env, argv[4], &max_entries) != napi_ok ||
      napi_get_value_double(env, argv[5], &max_depth) != napi_ok ||
      napi_typeof(env, argv[6], &callback_type) != napi_ok || callback_type != napi_function) {
    free(joined);
    return number(env, -EINVAL);
  }
  run_batch_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    free(joined);
    return number(env, -ENOMEM);
  }
  b->items = calloc(count, sizeof *b->items);
  b->file_name = strdup(file_name);
  b->listing_name = strdup(listing_name);
  b->count = b->items == NULL ? 0 : count;
  if (b->items == NULL || b->file_name == NULL || b->listing_name == NULL) {
    free(joined);
    free_run_batch(env, b);
    return number(env, -ENOMEM);
  }
  b->max_bytes = max_bytes;
  const char *next = joined;
  for (uint32_t i = 0; i < count; i++) {
    run_read_t *item = &b->items[i];
    if (joined != NULL) {
      item->dir = strdup(next);
      next += strlen(next) + 1;
    } else {
      napi_value dir_value;
      if (napi_get_element(env, argv[0], i, &dir_value) != napi_ok) {
        free_run_batch(env, b);
        return number(env, -EINVAL);
      }
      /* A string or a Buffer of a path's bytes, nothing else (bad arguments, not a shortage of memory). */
      const char *raw = NULL;
      size_t length = 0;
      napi_valuetype type;
      int is_buffer = buffer_arg(env, dir_value, &raw, &length);
      if (!is_buffer && (napi_typeof(env, dir_value, &type) != napi_ok || type != napi_string ||
                         napi_get_value_string_utf8(env, dir_value, NULL, 0, &length) != napi_ok)) {
        free_run_batch(env, b);
        return number(env, -EINVAL);
      }
      item->dir = path_arg_copy(env, dir_value);
      /* A path holding a NUL names another directory once copied: that item alone is refused (EINVAL). */
      if (item->dir != NULL && strlen(item->dir) != length) item->bad_path = 1;
    }
    if (item->dir == NULL) {
      free(joined);
      free_run_batch(env, b);
      return number(env, -ENOMEM);
    }
    item->measured = max_entries >= 0;
    item->measure.walk = "measureTree";
    item->measure.root = item->dir;
    item->measure.max_entries = max_entries;
    item->measure.max_depth = max_depth;
  }
  free(joined);
  napi_value name;
  napi_create_string_utf8(env, "fsat.readRuns", NAPI_AUTO_LENGTH, &name);
  if (napi_create_reference(env, argv[6], 1, &b->callback) != napi_ok) {
    b->callback = NULL;
    free_run_batch(env, b);
    return number(env, -ENOMEM);
  }
  if (napi_create_async_work(env, NULL, name, run_batch_execute, run_batch_complete, b, &b->work) != napi_ok) {
    free_run_batch(env, b);
    return number(env, -ENOMEM);
  }
  if (napi_queue_async_work(env, b->work) != napi_ok) {
    napi_delete_async_work(env, b->work);
    free_run_batch(env, b);
    return number(env, -ENOMEM);
  }
  return number(env, 0);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor methods[] = {
    { "removeTree", NULL, remove_tree, NULL, NULL, NULL, napi_enumerable, NULL },
    { "measureTree", NULL, measure_tree, NULL, NULL, NULL, napi_enumerable, NULL },
    { "measureTreeSync", NULL, measure_tree_sync, NULL, NULL, NULL, napi_enumerable, NULL },
    { "removeTrees", NULL, remove_trees, NULL, NULL, NULL, napi_enumerable, NULL },
    { "syncFs", NULL, sync_fs, NULL, NULL, NULL, napi_enumerable, NULL },
    { "listInfo", NULL, list_info, NULL, NULL, NULL, napi_enumerable, NULL },
    { "linkEach", NULL, link_each, NULL, NULL, NULL, napi_enumerable, NULL },
    { "exchange", NULL, exchange, NULL, NULL, NULL, napi_enumerable, NULL },
    { "seek", NULL, seek_extent, NULL, NULL, NULL, napi_enumerable, NULL },
    { "readRuns", NULL, read_runs, NULL, NULL, NULL, napi_enumerable, NULL },
  };
  napi_define_properties(env, exports, sizeof methods / sizeof methods[0], methods);
  /* The measure calls' version (their signatures): JavaScript uses them only when it matches, so an addon
     built from other sources (a stale build/) is never called with arguments it reads differently. */
  napi_value version;
  napi_create_uint32(env, MEASURE_VERSION, &version);
  napi_set_named_property(env, exports, "measureVersion", version);
  napi_value remove_version;
  napi_create_uint32(env, REMOVE_VERSION, &remove_version);
  napi_set_named_property(env, exports, "removeVersion", remove_version);
  napi_value info_fields;
  napi_create_uint32(env, INFO_FIELDS, &info_fields);
  napi_set_named_property(env, exports, "infoFields", info_fields);
  napi_value read_runs_version;
  napi_create_uint32(env, READ_RUNS_VERSION, &read_runs_version);
  napi_set_named_property(env, exports, "readRunsVersion", read_runs_version);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
