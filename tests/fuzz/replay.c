/*
 * Feed files to a fuzz target's LLVMFuzzerTestOneInput, so that every build (gcc too) replays
 * the seed corpus and the inputs that once failed (tests/fuzz/corpus/TARGET/). Arguments are
 * files or directories (their regular files, and those of their subdirectories, as libFuzzer
 * reads a corpus directory). Exit 0 when every input ran: a finding aborts, as under
 * libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += n;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf)
        return 1;
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int
replay(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ++*count;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (!d)
        return 1;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) && rc == 0;) {
        char child[4096];
        snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
        if (e->d_name[0] == '.' || stat(child, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = replay(child, count);
        } else if (S_ISREG(st.st_mode)) {
            ++*count;
            rc = replay_file(child);
        }
    }
    closedir(d);
    return rc;
}

int
main(int argc, char **argv)
{
    size_t count = 0;
    for (int i = 1; i < argc; i++)
        if (replay(argv[i], &count) != 0)
            return 1;
    printf("replayed %zu inputs\n", count);
    return count > 0 ? 0 : 1;
}
