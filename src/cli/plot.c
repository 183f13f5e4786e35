/* `spsim plot`: the Python module's pictures (python3 -m spsim.plot) with the same arguments. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* PYTHONPATH: this build's package (BUILD/python), then the installed one, then the caller's. */
static int
set_python_path(void)
{
    const char *old = getenv("PYTHONPATH");
    size_t len = strlen(SPSIM_PYTHON_BUILD_PATH) + strlen(SPSIM_PYTHON_INSTALL_PATH) +
                 (old ? strlen(old) : 0) + 3;
    char *path = malloc(len);
    if (!path)
        return cli_error(EXIT_RUNTIME, "out of memory");
    snprintf(path, len, "%s:%s%s%s", SPSIM_PYTHON_BUILD_PATH, SPSIM_PYTHON_INSTALL_PATH,
             old && *old ? ":" : "", old && *old ? old : "");
    int rc = setenv("PYTHONPATH", path, 1);
    free(path);
    return rc == 0 ? EXIT_OK : cli_error(EXIT_RUNTIME, "PYTHONPATH: %s", strerror(errno));
}

int
cmd_plot(int argc, char **argv)
{
    if (!HAVE_PYTHON)
        return cli_error(EXIT_RUNTIME, "plot: this spsim was built without its Python module "
                                       "(install python3-dev and build again)");
    int rc = set_python_path();
    if (rc != EXIT_OK)
        return rc;
    char **args = calloc((size_t)argc + 4, sizeof(*args));
    if (!args)
        return cli_error(EXIT_RUNTIME, "out of memory");
    args[0] = (char *)SPSIM_PYTHON;
    args[1] = (char *)"-m";
    args[2] = (char *)"spsim.plot";
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    fflush(NULL);
    execv(SPSIM_PYTHON, args);
    rc = cli_error(EXIT_RUNTIME, "plot: %s: %s", SPSIM_PYTHON, strerror(errno));
    free(args);
    return rc;
}
