/* Profile NAME resolution: $SPSIM_DATA_DIR, the source tree, the installed data directory. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "spsim/data.h"

static bool
is_dir(const char *path)
{
    struct stat st;
    return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool
is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The places searched, in order: $SPSIM_DATA_DIR, the source tree (uninstalled builds), the
 * installed data directory. */
static int
candidates(const char *dirs[3])
{
    int n = 0;
    const char *env = getenv("SPSIM_DATA_DIR");
    if (env && *env)
        dirs[n++] = env;
    dirs[n++] = SPSIM_SOURCE_DATADIR;
    dirs[n++] = SPSIM_INSTALL_DATADIR;
    return n;
}

const char *
spsim_data_dir(void)
{
    const char *dirs[3];
    int n = candidates(dirs);
    for (int i = 0; i < n; i++) {
        char probe[4096];
        snprintf(probe, sizeof(probe), "%s/models", dirs[i]);
        if (is_dir(probe))
            return dirs[i];
    }
    return NULL;
}

static const char *
kind_dir(enum spsim_profile_kind kind)
{
    return kind == SPSIM_PROFILE_MODEL ? "models" : "hardware";
}

struct names {
    char *name[256];
    size_t n;
};

static int
collect_name(void *cookie, const char *name, const char *path)
{
    struct names *names = cookie;
    (void)path;
    if (names->n < SPSIM_ARRAY_LENGTH(names->name) && (names->name[names->n] = spsim_strdup(name)))
        names->n++;
    return 0;
}

/* "; did you mean 'a' or 'b'?": the shipped names nearest a misspelt one ("" if none is). */
static const char *
did_you_mean(enum spsim_profile_kind kind, const char *arg, char *buf, size_t cap)
{
    struct names names = {.n = 0};
    buf[0] = '\0';
    if (spsim_profile_list(kind, collect_name, &names, NULL) == SPSIM_OK)
        spsim_did_you_mean(arg, (const char *const *)names.name, names.n, "", buf, cap);
    /* A part of a name ("h100" for dgx-h100, "llama3" for the Llama 3 profiles) is as near as a
     * misspelling: the names that hold it, when no name is a few edits away. */
    size_t used = 0, found = 0;
    const char *hold[3];
    char lower[128];
    snprintf(lower, sizeof(lower), "%s", arg);
    for (char *c = lower; *c; c++)
        *c = *c >= 'A' && *c <= 'Z' ? (char)(*c - 'A' + 'a') : *c; /* the shipped names' case */
    for (size_t i = 0; !buf[0] && strlen(lower) >= 2 && i < names.n && found < 3; i++)
        if (strstr(names.name[i], lower))
            hold[found++] = names.name[i];
    for (size_t i = 0; i < found && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s'%s",
                                 i == 0           ? "; did you mean "
                                 : i + 1 == found ? " or "
                                                  : ", ",
                                 hold[i], i + 1 == found ? "?" : "");
    for (size_t i = 0; i < names.n; i++)
        free(names.name[i]);
    return buf;
}

int
spsim_profile_resolve(enum spsim_profile_kind kind, const char *arg, char *out, size_t cap,
                      struct spsim_error *err)
{
    if (!arg || !out || !*arg)
        return spsim_fail(err, SPSIM_EINVAL, "empty %s profile name",
                          kind == SPSIM_PROFILE_MODEL ? "model" : "hardware");
    size_t len = strlen(arg);
    bool is_path = strchr(arg, '/') || (len > 5 && strcmp(arg + len - 5, ".json") == 0);
    if (is_path) {
        if (len + 1 > cap)
            return spsim_fail(err, SPSIM_EINVAL, "%s: path too long", arg);
        memcpy(out, arg, len + 1);
        return SPSIM_OK;
    }
    const char *dirs[3];
    int n = candidates(dirs);
    for (int i = 0; i < n; i++) {
        int w = snprintf(out, cap, "%s/%s/%s.json", dirs[i], kind_dir(kind), arg);
        if (w < 0 || (size_t)w >= cap)
            return spsim_fail(err, SPSIM_EINVAL, "%s: path too long", arg);
        if (is_file(out))
            return SPSIM_OK;
    }
    char hint[256];
    return spsim_fail(err, SPSIM_EIO,
                      "no %s profile named %s%s (looked for %s/%s.json in $SPSIM_DATA_DIR, %s "
                      "and %s; 'spsim list %s' shows the names)",
                      kind == SPSIM_PROFILE_MODEL ? "model" : "hardware", SPSIM_Q(arg),
                      did_you_mean(kind, arg, hint, sizeof(hint)), kind_dir(kind), arg,
                      SPSIM_SOURCE_DATADIR, SPSIM_INSTALL_DATADIR, kind_dir(kind));
}

static int
compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int
spsim_profile_list(enum spsim_profile_kind kind,
                   int (*fn)(void *cookie, const char *name, const char *path), void *cookie,
                   struct spsim_error *err)
{
    const char *root = spsim_data_dir();
    if (!root)
        return spsim_fail(err, SPSIM_EIO, "no data directory found (set SPSIM_DATA_DIR)");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/%s", root, kind_dir(kind));
    DIR *d = opendir(dir);
    if (!d)
        return spsim_fail(err, SPSIM_EIO, "%s: cannot open directory", dir);
    char *names[1024];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < SPSIM_ARRAY_LENGTH(names);) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && e->d_name[0] != '.') {
            names[n] = spsim_strdup(e->d_name);
            if (!names[n])
                break;
            names[n][len - 5] = '\0';
            n++;
        }
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), compare_names);
    int stop = 0;
    for (size_t i = 0; i < n; i++) {
        if (!stop) {
            char path[4400];
            snprintf(path, sizeof(path), "%s/%s.json", dir, names[i]);
            stop = fn(cookie, names[i], path);
        }
        free(names[i]);
    }
    return SPSIM_OK;
}
