/* Where profiles live: resolving a NAME to models/NAME.json or hardware/NAME.json. */
#ifndef SPSIM_DATA_H
#define SPSIM_DATA_H

#include "spsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum spsim_profile_kind { SPSIM_PROFILE_MODEL = 0, SPSIM_PROFILE_HARDWARE = 1 };

/**
 * Resolve a profile argument. An argument containing '/' or ending in ".json" is a path and is
 * returned as it is. Otherwise it is a NAME, looked up as `models/NAME.json` (or
 * `hardware/NAME.json`) in, in order: the directory named by the environment variable
 * SPSIM_DATA_DIR, the source tree the library was built from, and the installed data directory
 * (PREFIX/share/spsim).
 * @param out  receives the path; capacity `cap` bytes
 * @return SPSIM_OK; SPSIM_EIO if no such profile exists (err names the places searched);
 *         SPSIM_EINVAL if the path does not fit in `cap`
 */
SPSIM_API int spsim_profile_resolve(enum spsim_profile_kind kind, const char *arg, char *out,
                                    size_t cap, struct spsim_error *err);

/**
 * Call `fn` once for each profile of `kind` in the first data directory that exists, in name
 * order, with the profile's name and path. Stops early when fn returns non-zero.
 * @return SPSIM_OK, or SPSIM_EIO when no data directory exists
 */
SPSIM_API int spsim_profile_list(enum spsim_profile_kind kind,
                                 int (*fn)(void *cookie, const char *name, const char *path),
                                 void *cookie, struct spsim_error *err);

/** @return the data directory in use (first that exists), or NULL; static storage. */
SPSIM_API const char *spsim_data_dir(void);

#ifdef __cplusplus
}
#endif

#endif
