/*
 * fsat: the few directory-relative syscalls Node does not expose (openat, fdopendir, fstatat, unlinkat), for
 * the Node layer's tree walks (src/layers/NativeWalk.ts).
 *
 * Why: Node addresses every entry by absolute path, so each lstat/unlink resolves the whole path again and
 * a directory swapped for a symlink between listing and opening could be followed. Relative to an open
 * directory descriptor, with O_NOFOLLOW on every open, neither happens (issue 7, DESIGN "Performance facts").
 *
 * Every function returns a negative errno instead of throwing, so the common "vanished" case costs no Error
 * object; the TypeScript side turns errnos into typed errors.
 */
#define _GNU_SOURCE
#include <node_api.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define NAME_MAX_BYTES 4096

/* Entry types shared with NativeWalk.ts. */
enum { T_UNKNOWN = 0, T_FILE = 1, T_DIRECTORY = 2, T_SYMLINK = 3, T_OTHER = 4 };

static napi_value number(napi_env env, double value) {
  napi_value out;
  napi_create_double(env, value, &out);
  return out;
}

static int int_arg(napi_env env, napi_value value, int32_t *out) {
  return napi_get_value_int32(env, value, out) == napi_ok;
}

/* Copies a string argument into buf; 0 when it is not a string or too long. */
static int string_arg(napi_env env, napi_value value, char *buf, size_t size) {
  size_t length = 0;
  if (napi_get_value_string_utf8(env, value, buf, size, &length) != napi_ok) return 0;
  return length + 1 < size;
}

/* Fetches `want` arguments and reads the first, a descriptor; 0 when missing or not an integer. */
static int fd_first(napi_env env, napi_callback_info info, size_t want, napi_value *argv, int32_t *fd) {
  size_t argc = want;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  return argc >= want && int_arg(env, argv[0], fd);
}

/* The (dirFd, name, ...) calls: as fd_first, and the second argument is a name; 0 when malformed. */
static int fd_and_name(napi_env env, napi_callback_info info, size_t want, napi_value *argv, int32_t *dir_fd, char *name) {
  return fd_first(env, info, want, argv, dir_fd) && string_arg(env, argv[1], name, NAME_MAX_BYTES);
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

/* openDir(path): a directory descriptor; never follows a final symlink (ELOOP/ENOTDIR instead). */
static napi_value open_dir(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char path[NAME_MAX_BYTES];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || !string_arg(env, argv[0], path, sizeof path)) return number(env, -EINVAL);
  int fd = open(path, DIR_FLAGS);
  return number(env, fd < 0 ? -errno : fd);
}

/* openDirAt(dirFd, name): a child directory's descriptor, relative to its parent, never through a link. */
static napi_value open_dir_at(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t dir_fd;
  char name[NAME_MAX_BYTES];
  if (!fd_and_name(env, info, 2, argv, &dir_fd, name)) return number(env, -EINVAL);
  int fd = openat(dir_fd, name, DIR_FLAGS);
  return number(env, fd < 0 ? -errno : fd);
}

/*
 * list(dirFd, types): the names in the directory (without "." and ".."); their entry types are appended to
 * the JS array `types`. Returns the names array, or a negative errno. The descriptor stays open.
 */
static napi_value list(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  int32_t dir_fd;
  if (!fd_first(env, info, 2, argv, &dir_fd)) return number(env, -EINVAL);
  int copy = dup(dir_fd);
  if (copy < 0) return number(env, -errno);
  DIR *dir = fdopendir(copy);
  if (dir == NULL) {
    int error = errno;
    close(copy);
    return number(env, -error);
  }
  rewinddir(dir);
  napi_value names;
  napi_create_array(env, &names);
  uint32_t count = 0;
  for (;;) {
    errno = 0;
    struct dirent *entry = readdir(dir);
    if (entry == NULL) {
      int error = errno;
      closedir(dir);
      if (error != 0) return number(env, -error);
      return names;
    }
    const char *name = entry->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    napi_value js_name;
    napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &js_name);
    napi_set_element(env, names, count, js_name);
    napi_set_element(env, argv[1], count, number(env, type_of_dirent(entry->d_type)));
    count++;
  }
}

/*
 * statAt(dirFd, name, out): lstat relative to a directory. Writes [type, size] into the Float64Array `out`;
 * returns 0 or a negative errno.
 */
static napi_value stat_at(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t dir_fd;
  char name[NAME_MAX_BYTES];
  if (!fd_and_name(env, info, 3, argv, &dir_fd, name)) return number(env, -EINVAL);
  napi_typedarray_type kind;
  size_t length;
  void *data;
  if (napi_get_typedarray_info(env, argv[2], &kind, &length, &data, NULL, NULL) != napi_ok ||
      kind != napi_float64_array || length < 2) {
    return number(env, -EINVAL);
  }
  struct stat st;
  if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return number(env, -errno);
  double *out = data;
  out[0] = type_of_mode(st.st_mode);
  out[1] = (double)st.st_size;
  return number(env, 0);
}

/* unlinkAt(dirFd, name, isDirectory): removes the entry itself (a link, never its target). 0 or -errno. */
static napi_value unlink_at(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t dir_fd;
  bool is_directory = false;
  char name[NAME_MAX_BYTES];
  if (!fd_and_name(env, info, 3, argv, &dir_fd, name) || napi_get_value_bool(env, argv[2], &is_directory) != napi_ok) {
    return number(env, -EINVAL);
  }
  int result = unlinkat(dir_fd, name, is_directory ? AT_REMOVEDIR : 0);
  return number(env, result != 0 ? -errno : 0);
}

/* close(fd): 0 or -errno. */
static napi_value close_fd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  int32_t fd;
  if (!fd_first(env, info, 1, argv, &fd)) return number(env, -EINVAL);
  return number(env, close(fd) != 0 ? -errno : 0);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor methods[] = {
    { "openDir", NULL, open_dir, NULL, NULL, NULL, napi_enumerable, NULL },
    { "openDirAt", NULL, open_dir_at, NULL, NULL, NULL, napi_enumerable, NULL },
    { "list", NULL, list, NULL, NULL, NULL, napi_enumerable, NULL },
    { "statAt", NULL, stat_at, NULL, NULL, NULL, napi_enumerable, NULL },
    { "unlinkAt", NULL, unlink_at, NULL, NULL, NULL, napi_enumerable, NULL },
    { "close", NULL, close_fd, NULL, NULL, NULL, napi_enumerable, NULL }
  };
  napi_define_properties(env, exports, sizeof methods / sizeof methods[0], methods);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
