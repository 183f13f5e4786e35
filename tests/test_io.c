/* The library's file readers and writers (issue 15): non-regular inputs refused without
 * blocking, /proc files read to the end, outputs written through links with their mode kept. */
#include "config.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "testutil.h"

static char dir[] = "/tmp/spsim-test-io-XXXXXX";

static void
setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static const char *
in_dir(char *buf, const char *name)
{
    snprintf(buf, 256, "%s/%s", dir, name);
    return buf;
}

static void
write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* alarm(): a reader that blocks on the FIFO fails the test instead of hanging it. */
START_TEST(fifo_refused_at_once)
{
    char path[256];
    ck_assert_int_eq(mkfifo(in_dir(path, "fifo"), 0600), 0);
    alarm(10);
    char *buf = NULL;
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_read_file(path, &buf, &len, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "not a regular file (a FIFO)"));
    struct spsim_model *m = NULL;
    ck_assert_int_eq(spsim_model_load(path, &m, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "not a regular file (a FIFO)"));
    int fd = -1;
    ck_assert_int_eq(spsim_file_open_input(path, &fd, &err), SPSIM_EIO);
    ck_assert_int_eq(fd, -1);
    alarm(0);
}
END_TEST

START_TEST(other_kinds_refused)
{
    static const struct {
        const char *path, *kind;
    } cases[] = {{"/dev/zero", "a character device"}, {"/tmp", "a directory"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *buf = NULL;
        size_t len = 0;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_read_file(cases[i].path, &buf, &len, &err), SPSIM_EIO);
        ck_assert_ptr_nonnull(strstr(err.message, cases[i].kind));
    }
    char path[256];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    in_dir(path, "sock");
    ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char *buf = NULL;
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_read_file(path, &buf, &len, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "not a regular file (a socket)"));
    close(s);
}
END_TEST

/* /proc files report st_size 0; their text must still be read. */
START_TEST(proc_file_read_to_end)
{
    struct stat st;
    ck_assert_int_eq(stat("/proc/self/status", &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    char *buf = NULL;
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_read_file("/proc/self/status", &buf, &len, &err), SPSIM_OK);
    ck_assert_uint_gt(len, 100);
    ck_assert_uint_eq(strlen(buf), len);
    ck_assert_int_eq(strncmp(buf, "Name:", 5), 0);
    ck_assert_ptr_nonnull(strstr(buf, "\nPid:"));
    free(buf);
}
END_TEST

START_TEST(large_file_refused)
{
    char path[256];
    int fd = open(in_dir(path, "big"), O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 64 * 1024 * 1024 + 1), 0);
    close(fd);
    char *buf = NULL;
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_read_file(path, &buf, &len, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "larger than 67108864 bytes"));
}
END_TEST

/* Issue 23, defect 1: "at most 64 MiB" (README) includes 64 MiB; the public readers the CLI's
 * --megatron-args uses (a file, standard input) keep that limit. */
START_TEST(file_of_64_mib_read)
{
    char path[256];
    int fd = open(in_dir(path, "64m"), O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, 64 * 1024 * 1024), 0);
    close(fd);
    char *buf = NULL;
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_file_read(path, &buf, &len, &err), SPSIM_OK);
    ck_assert_uint_eq(len, 64 * 1024 * 1024);
    free(buf);
    fd = open(path, O_RDONLY);
    ck_assert_int_eq(spsim_file_read_fd(fd, "-", &buf, &len, &err), SPSIM_OK);
    ck_assert_uint_eq(len, 64 * 1024 * 1024);
    free(buf);
    close(fd);
    fd = open("/dev/zero", O_RDONLY);
    ck_assert_int_eq(spsim_file_read_fd(fd, "-", &buf, &len, &err), SPSIM_EIO);
    ck_assert_str_eq(err.message, "-: file is larger than 67108864 bytes");
    close(fd);
    ck_assert_int_eq(spsim_file_read("/dev/zero", &buf, &len, &err), SPSIM_EIO);
    ck_assert_str_eq(err.message, "/dev/zero: not a regular file (a character device)");
}
END_TEST

static void
read_back(const char *path, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    ck_assert_int_eq(spsim_read_file(path, &buf, &len, NULL), SPSIM_OK);
    ck_assert_str_eq(buf, want);
    free(buf);
}

START_TEST(write_through_link)
{
    char target[256], link[256], sub[256];
    ck_assert_int_eq(mkdir(in_dir(sub, "d"), 0700), 0);
    write_text(in_dir(target, "d/target"), "old");
    ck_assert_int_eq(symlink("d/target", in_dir(link, "link")), 0);
    ck_assert_int_eq(spsim_file_write_atomic(link, "new", 3, NULL), SPSIM_OK);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    read_back(target, "new");
    /* A dangling link names the file to create; a chain of links is followed to its end. */
    char dangling[256], chain[256], created[256];
    ck_assert_int_eq(symlink("d/created", in_dir(dangling, "dangling")), 0);
    ck_assert_int_eq(symlink("dangling", in_dir(chain, "chain")), 0);
    ck_assert_int_eq(spsim_file_write_atomic(chain, "made", 4, NULL), SPSIM_OK);
    read_back(in_dir(created, "d/created"), "made");
    ck_assert_int_eq(lstat(dangling, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    /* A loop of links is an error, not a hang. */
    char a[256], b[256];
    ck_assert_int_eq(symlink("b", in_dir(a, "a")), 0);
    ck_assert_int_eq(symlink("a", in_dir(b, "b")), 0);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_file_write_atomic(a, "x", 1, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "symbolic link"));
}
END_TEST

START_TEST(mode_kept)
{
    char path[256];
    static const mode_t modes[] = {0444, 0640, 0600};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        write_text(in_dir(path, "file"), "old");
        ck_assert_int_eq(chmod(path, modes[i]), 0);
        ck_assert_int_eq(spsim_file_write_atomic(path, "new", 3, NULL), SPSIM_OK);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_uint_eq(st.st_mode & 0777, modes[i]);
        read_back(path, "new");
    }
    ck_assert_int_eq(spsim_file_write_atomic(in_dir(path, "fresh"), "x", 1, NULL), SPSIM_OK);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);
}
END_TEST

static size_t
entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    unsigned n = 0;
    ck_assert_int_eq(fscanf(p, "%u", &n), 1);
    pclose(p);
    return n;
}

/* Aborted, or past a file size limit (EFBIG once SIGXFSZ is ignored, as the command does): the
 * old file stays whole and no temporary file is left. */
START_TEST(abort_and_size_limit_keep_old)
{
    char path[256];
    write_text(in_dir(path, "out"), "old");
    struct spsim_output_file *f = NULL;
    ck_assert_int_eq(spsim_output_file_open(path, &f, NULL), SPSIM_OK);
    ck_assert_int_eq(write(spsim_output_file_fd(f), "partial", 7), 7);
    spsim_output_file_abort(f);
    read_back(path, "old");
    ck_assert_uint_eq(entries(), 1);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, rl;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    rl = (struct rlimit){4096, old.rlim_max};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    static char big[8192];
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_file_write_atomic(path, big, sizeof(big), &err), SPSIM_EIO);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0); /* CK_FORK=no: later tests too */
    ck_assert_ptr_nonnull(strstr(err.message, "File too large"));
    read_back(path, "old");
    ck_assert_uint_eq(entries(), 1);
    ck_assert_int_eq(spsim_output_file_open("", &f, &err), SPSIM_EINVAL);
}
END_TEST

/* Issue 23, defect 5: text from an input is shown escaped, in quotes, on one line. Each expected
 * string is written out by hand from the rule in common.h. */
START_TEST(quote_escapes_and_cuts)
{
    char buf[64];
    ck_assert_str_eq(spsim_quote("a\nb", SIZE_MAX, buf, sizeof(buf)), "'a\\nb'");
    ck_assert_str_eq(spsim_quote("\x1b[31mred", SIZE_MAX, buf, sizeof(buf)), "'\\x1B[31mred'");
    ck_assert_str_eq(spsim_quote("it's a\\b", SIZE_MAX, buf, sizeof(buf)), "'it\\'s a\\\\b'");
    /* Valid UTF-8 stays (U+00B7 middle dot); a lone continuation byte, an overlong '/' (C0 AF),
     * a surrogate (ED A0 80), C1 CSI (C2 9B), DEL and U+2028 are bytes. */
    ck_assert_str_eq(spsim_quote("tp\xc2\xb7"
                                 "cp",
                                 SIZE_MAX, buf, sizeof(buf)),
                     "'tp\xc2\xb7"
                     "cp'");
    ck_assert_str_eq(spsim_quote("\x80\xc0\xaf", SIZE_MAX, buf, sizeof(buf)), "'\\x80\\xC0\\xAF'");
    ck_assert_str_eq(spsim_quote("\xed\xa0\x80", SIZE_MAX, buf, sizeof(buf)), "'\\xED\\xA0\\x80'");
    ck_assert_str_eq(spsim_quote("\xc2\x9b\x7f", SIZE_MAX, buf, sizeof(buf)), "'\\xC2\\x9B\\x7F'");
    ck_assert_str_eq(spsim_quote("a\xe2\x80\xa8z", SIZE_MAX, buf, sizeof(buf)),
                     "'a\\xE2\\x80\\xA8z'");
    /* An explicit length: the NUL inside is shown, not the end. */
    ck_assert_str_eq(spsim_quote("a\0b", 3, buf, sizeof(buf)), "'a\\x00b'");
    ck_assert_str_eq(spsim_quote(NULL, 0, buf, sizeof(buf)), "'(null)'");
    /* Cut to fit: 12 bytes hold 'abcdef...' and the NUL; an escape is never split. */
    ck_assert_str_eq(spsim_quote("abcdefghijklmnop", SIZE_MAX, buf, 12), "'abcdef...'");
    ck_assert_str_eq(spsim_quote("abcde\nfghijklmnop", SIZE_MAX, buf, 12), "'abcde...'");
    ck_assert_str_eq(spsim_quote("abcdefghi", SIZE_MAX, buf, 12), "'abcdefghi'");
    /* spsim_escape: no quotes, ' and \ as they are. */
    ck_assert_str_eq(spsim_escape("x: 'a\r\tb' \\", SIZE_MAX, buf, sizeof(buf)),
                     "x: 'a\\r\\tb' \\");
    ck_assert_str_eq(spsim_escape("abcdefghijklmnop", SIZE_MAX, buf, 12), "abcdefgh...");
}
END_TEST

/* Every library message is one line, whatever its arguments hold (spsim_fail escapes). */
START_TEST(failure_message_one_line)
{
    char path[256];
    struct spsim_error err = {0};
    struct spsim_model *m = NULL;
    ck_assert_int_ne(
        spsim_model_parse("{\"name\": 1}", 11, in_dir(path, "a\nb\x1b[2J.json"), &m, &err),
        SPSIM_OK);
    ck_assert_ptr_null(strchr(err.message, '\n'));
    ck_assert_ptr_null(strchr(err.message, '\x1b'));
    ck_assert_ptr_nonnull(strstr(err.message, "a\\nb\\x1B[2J.json"));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("io");
    TCase *tc = tcase_create("read");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fifo_refused_at_once);
    tcase_add_test(tc, other_kinds_refused);
    tcase_add_test(tc, proc_file_read_to_end);
    tcase_add_test(tc, large_file_refused);
    tcase_add_test(tc, file_of_64_mib_read);
    suite_add_tcase(s, tc);
    tc = tcase_create("write");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, write_through_link);
    tcase_add_test(tc, mode_kept);
    tcase_add_test(tc, abort_and_size_limit_keep_old);
    suite_add_tcase(s, tc);
    tc = tcase_create("messages");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, quote_escapes_and_cuts);
    tcase_add_test(tc, failure_message_one_line);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
