/* `spsim check FILE...`: validate profiles with the real loaders. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char check_help[] =
    "Usage: spsim check FILE...\n"
    "\n"
    "Validate model and hardware profiles with the loader every command uses. The kind is read\n"
    "from the file's \"schema\" field. Prints 'FILE: ok' per valid file ('FILE: ok, time model\n"
    "refused: unsourced FIELDS' for a hardware profile that marks figures the time model needs\n"
    "{\"value\": null}: only list and check read it); the first error of each invalid file goes\n"
    "to standard error. Exit status 0 when all are valid, 3 otherwise.\n";

static bool
is_hardware(const char *path)
{
    /* Decide by the schema string; a file without one is tried as a model (whose loader
     * then names the missing field). */
    int fd = -1;
    if (spsim_file_open_input(path, &fd, NULL) != SPSIM_OK)
        return false; /* not readable, or a FIFO: the loader reports it */
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, "spsim-hardware/") != NULL;
}

int
cmd_check(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(check_help, stdout);
        return EXIT_OK;
    }
    if (argc < 2)
        return cli_usage_error("check", "expected at least one FILE");
    int rc = EXIT_OK;
    for (int i = 1; i < argc; i++) {
        struct spsim_error err = {0};
        int status;
        if (is_hardware(argv[i])) {
            struct spsim_hardware *hw = NULL;
            status = spsim_hardware_load_listing(argv[i], &hw, &err);
            struct spsim_hardware_info info = {0};
            if (status == SPSIM_OK)
                spsim_hardware_get_info(hw, &info);
            if (info.unsourced_fields)
                printf("%s: ok, time model refused: unsourced %s\n", argv[i],
                       info.unsourced_fields);
            spsim_hardware_destroy(hw);
            if (info.unsourced_fields)
                continue;
        } else {
            struct spsim_model *m = NULL;
            status = spsim_model_load(argv[i], &m, &err);
            spsim_model_destroy(m);
        }
        if (status == SPSIM_OK) {
            printf("%s: ok\n", argv[i]);
        } else {
            int code = cli_fail(&err);
            if (rc == EXIT_OK)
                rc = code;
        }
    }
    return rc;
}
