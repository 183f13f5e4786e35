/*
 * spsim: analytic simulator of Megatron-style tensor, sequence, pipeline and data parallel
 * training. Common definitions shared by every public header.
 */
#ifndef SPSIM_COMMON_H
#define SPSIM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(SPSIM_BUILDING_LIBRARY) && defined(__GNUC__)
#define SPSIM_API __attribute__((visibility("default")))
#else
#define SPSIM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Status codes. Every fallible function returns SPSIM_OK (0) or one of these negative values.
 * The numeric values are stable.
 */
enum spsim_status {
    SPSIM_OK = 0,
    SPSIM_EINVAL = -1,   /**< invalid argument (NULL pointer, bad enum) */
    SPSIM_ENOMEM = -2,   /**< allocation failed */
    SPSIM_EIO = -3,      /**< a file could not be read or written */
    SPSIM_EPARSE = -4,   /**< malformed JSON */
    SPSIM_EFIELD = -5,   /**< a field is missing, has the wrong type or is out of range */
    SPSIM_ECONFIG = -6,  /**< the parallel configuration is invalid or cannot run */
    SPSIM_ERANGE = -7,   /**< a result cannot be represented (64-bit overflow) */
    SPSIM_ENOTSUP = -8,  /**< not supported by this build (e.g. no GPU support) */
    SPSIM_EGPU = -9,     /**< a CUDA, cuBLAS or NCCL call failed */
    SPSIM_ENUMERIC = -10 /**< a numerical routine (GSL) failed */
};

/** Longest message held by struct spsim_error, terminating NUL included. */
#define SPSIM_ERROR_MESSAGE_MAX 512

/**
 * Detail of a failure. Functions that take a `struct spsim_error *` fill it on failure (it may
 * be NULL). The message names the file, the field and the rule, e.g.
 * "models/x.json: field 'hidden': must be an integer in [1, 1048576]". It carries no
 * "error:" prefix and no trailing newline: the caller decides how to show it.
 */
struct spsim_error {
    int code;                              /**< the enum spsim_status value returned */
    char message[SPSIM_ERROR_MESSAGE_MAX]; /**< NUL-terminated, one line */
};

/**
 * @return a static one-line description of a status code; never NULL (unknown codes give
 * "unknown error").
 */
SPSIM_API const char *spsim_strerror(int code);

/**
 * Write `len` bytes to `path` atomically: a temporary file beside it, fsync, rename(2). Readers
 * see either the old file or the whole new one, never a part. Links, permission bits, devices
 * and pipes as spsim_output_file_open() says.
 * @return SPSIM_OK or SPSIM_EIO (err names the path and the system error)
 */
SPSIM_API int spsim_file_write_atomic(const char *path, const void *data, size_t len,
                                      struct spsim_error *err);

/**
 * Open a file for reading without blocking on it: a FIFO, a device, a directory or a socket is
 * refused (reading a FIFO with no writer would wait forever). The descriptor is blocking again
 * when returned.
 * @param fd  receives the descriptor; the caller closes it
 * @return SPSIM_OK, SPSIM_EIO ("PATH: cannot open: REASON", "PATH: not a regular file (a FIFO)")
 *         or SPSIM_EINVAL (NULL argument)
 */
SPSIM_API int spsim_file_open_input(const char *path, int *fd, struct spsim_error *err);

/**
 * Read a whole input file: a regular file (as spsim_file_open_input() opens it: a FIFO, a
 * device, a directory or a socket is refused at once) of at most 64 MiB, to its end (files
 * under /proc report no size).
 * @param buf  receives the text with a NUL after its `len` bytes; the caller frees it with free()
 * @return SPSIM_OK, SPSIM_EIO ("PATH: not a regular file (a FIFO)", "PATH: file is larger than
 *         67108864 bytes", "PATH: read error: REASON"), SPSIM_ENOMEM or SPSIM_EINVAL
 */
SPSIM_API int spsim_file_read(const char *path, char **buf, size_t *len, struct spsim_error *err);
/** The same from an open descriptor (standard input for "-"), read to its end, at most 64 MiB;
 * `name` is used in messages. */
SPSIM_API int spsim_file_read_fd(int fd, const char *name, char **buf, size_t *len,
                                 struct spsim_error *err);

/**
 * An output file being written atomically, for outputs streamed rather than held in memory
 * (spsim_file_write_atomic() writes one buffer through it). Opaque.
 *
 * A temporary file is created beside the target and renamed over it by the commit; a symbolic
 * link is followed (its target is replaced, the link stays), an existing file keeps its
 * permission bits (a new one gets 0644), and a device or a pipe is written in place.
 */
struct spsim_output_file;

/** @param out  receives the file; finish it with commit or abort
 * @return SPSIM_OK; SPSIM_EIO (the temporary file cannot be created: err names the path);
 *         SPSIM_EINVAL (NULL or empty path); SPSIM_ENOMEM */
SPSIM_API int spsim_output_file_open(const char *path, struct spsim_output_file **out,
                                     struct spsim_error *err);
/** @return the descriptor to write to (owned by the file) */
SPSIM_API int spsim_output_file_fd(const struct spsim_output_file *file);
/** fsync, set the permission bits and rename into place; frees the file, which on failure is
 * removed and the old one left as it was. @return SPSIM_OK or SPSIM_EIO */
SPSIM_API int spsim_output_file_commit(struct spsim_output_file *file, struct spsim_error *err);
/** Remove the temporary file and free; NULL is accepted. */
SPSIM_API void spsim_output_file_abort(struct spsim_output_file *file);

/**
 * Text from an input, made safe to echo in a one-line message: a control byte (a newline, an
 * ANSI escape), DEL, a C1 control (U+0080..U+009F), a line or paragraph separator or a
 * bidirectional override (U+2028, U+2029, U+202A..U+202E, U+2066..U+2069) and a byte that is not
 * part of valid UTF-8 (RFC 3629) are written as \n, \t, \r or \xHH, one \xHH per byte;
 * everything else is copied. spsim_quote() also puts the text in single quotes and a backslash
 * before ' and \, so that what is shown reads back unambiguously. A text longer than `cap`
 * allows is cut at a character and ends in "..." (inside the quotes).
 * @param len  the bytes of text, or SIZE_MAX for a NUL-terminated one (NULL is "(null)")
 * @param cap  at least 8; buf always receives a NUL-terminated string
 * @return buf
 */
SPSIM_API const char *spsim_quote(const char *text, size_t len, char *buf, size_t cap);
SPSIM_API const char *spsim_escape(const char *text, size_t len, char *buf, size_t cap);

/** @return the library version, "MAJOR.MINOR.PATCH"; static storage. */
SPSIM_API const char *spsim_version(void);

/**
 * Whether an MPI launcher started this process: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE),
 * MPICH/Hydra (PMI_SIZE) or a PMIx launcher such as Slurm's srun (PMIX_RANK).
 * @param world_size  optional; receives the ranks the launcher started (OMPI_COMM_WORLD_SIZE or
 *                    PMI_SIZE), 0 when it does not say
 */
SPSIM_API bool spsim_mpi_launched(uint32_t *world_size);

/**
 * "Did you mean": the candidates nearest a misspelt word by edit distance (insertions,
 * deletions and substitutions of bytes), at most three of those within max(2, strlen(word) / 3)
 * edits, nearest first (ties in the candidates' order), as "; did you mean 'a', 'b' or 'c'?"
 * with `prefix` before each name ("--" for options).
 * @return buf; "" when no candidate is near
 */
SPSIM_API const char *spsim_did_you_mean(const char *word, const char *const *candidates, size_t n,
                                         const char *prefix, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
