/*
 * dmversion.c — dmindex_version(): the shared library's version.
 *
 * The library and a database's extension schema are upgraded separately
 * (install the new package, then ALTER EXTENSION dmindex UPDATE in each
 * database), so an administrator needs to see both: this function gives
 * the library's, pg_extension.extversion the schema's.  The value is the
 * control file's default_version, compiled in by the Makefile.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#ifndef DMINDEX_VERSION
#error "DMINDEX_VERSION must be defined by the Makefile"
#endif

PG_FUNCTION_INFO_V1(dmindex_version);

Datum
dmindex_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(DMINDEX_VERSION));
}
