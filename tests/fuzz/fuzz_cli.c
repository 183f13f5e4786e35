/*
 * The spsim command in-process: the input is its argument list, one argument per line. The
 * CLI's sources are built into this target with main renamed (tests/fuzz/meson.build). Left
 * out: validate and calibrate without a log (they need a GPU), plot (it execs the Python
 * interpreter, which would replace the fuzzer's process), sweep and optimize (a few bytes
 * of options describe spaces of 10^12 points; fuzz_spec runs sweeps, bounded), absolute or
 * '..' paths, and an output path with a '/': the target runs in a scratch directory that links
 * to the source tree's models/, hardware/, examples/ and tests/, and -o writes only there
 * ($TMPDIR/spsim-fuzz-cli-XXXXXX, removed when the process exits).
 */
#include <dirent.h>
#include <getopt.h>
#include <unistd.h>

#include "fuzz.h"

int spsim_cli_main(int argc, char **argv);

#define MAX_ARGS 32

static bool
allowed(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "validate") == 0 || strcmp(argv[1], "sweep") == 0 ||
        strcmp(argv[1], "optimize") == 0 || strcmp(argv[1], "plot") == 0)
        return false;
    bool from_log = false;
    for (int i = 1; i < argc; i++) {
        bool output = strncmp(argv[i], "-o", 2) == 0 || strncmp(argv[i], "--output", 8) == 0;
        if (argv[i][0] == '/' || strstr(argv[i], "..") ||
            (output && (strchr(argv[i], '/') || (i + 1 < argc && strchr(argv[i + 1], '/')))))
            return false;
        from_log |= strcmp(argv[i], "--from-nccl-tests") == 0;
    }
    return strcmp(argv[1], "calibrate") != 0 || from_log;
}

/* The scratch directory, removed at exit (it used to stay behind, one per process). It holds
 * the links and the outputs (-o NAME, no '/'), so one level is all there is to remove. */
static char scratch[4096];

static void
remove_scratch(void)
{
    DIR *d = opendir(scratch);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[4096 + 256];
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof(path), "%s/%s", scratch, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
    if (chdir("/") == 0)
        rmdir(scratch);
}

static void
setup_once(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, sizeof(scratch), "%s/spsim-fuzz-cli-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch) || atexit(remove_scratch) != 0 || chdir(scratch) != 0 ||
        !freopen("/dev/null", "w", stdout))
        abort();
    static const char *const links[] = {"models", "hardware", "examples", "tests"};
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
        if (symlink(fuzz_data_path(links[i]), links[i]) != 0)
            abort();
    setenv("SPSIM_DATA_DIR", SPSIM_SOURCE_DATADIR, 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup_once();
    char *text = fuzz_text(data, size);
    char *argv[MAX_ARGS + 2] = {"spsim"};
    int argc = 1;
    char *a, *save = NULL;
    for (a = strtok_r(text, "\n", &save); a && argc <= MAX_ARGS; a = strtok_r(NULL, "\n", &save))
        argv[argc++] = a;
    argv[argc] = NULL;
    if (!a && allowed(argc, argv)) {
        /* The commands set optind = 1, as one parse per process may; glibc keeps its place in
         * a cluster of short options ("-hx") unless optind = 0 (getopt(3)), which here would
         * point into the previous input. */
        char *reset[] = {"spsim", NULL};
        optind = 0;
        getopt(1, reset, "");
        int rc = spsim_cli_main(argc, argv);
        if (rc < 0 || rc > 6)
            fuzz_fail("cli", "exit status", rc);
    }
    free(text);
    return 0;
}
