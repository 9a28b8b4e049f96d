/*
 * A SQLite VFS over the default one that writes a WAL file's frames in one piece
 * (docs/decisions/0072). SQLite writes each WAL frame with two calls, its 24-byte header and
 * then its page, so a commit of 50 pages was 100 pwrite() calls, about a fifth of the system
 * calls of a turn through `rein serve` (issue 25). Here the writes to a WAL file that follow
 * one another are gathered in memory and reach the file in one call when SQLite next does
 * anything else with it: syncs it (a commit with synchronous=FULL), reads it, asks its size,
 * truncates it, closes it, or writes somewhere that does not follow on.
 *
 * What is durable when does not change: SQLite promises nothing about a write before its
 * sync, and the sync writes what is gathered first and reports that write's failure as its
 * own. Only the exclusive-mode store opens its database through this VFS: there the WAL index
 * lives in this process's heap and no other process reads the WAL, so nobody can see the file
 * between a write and the next thing SQLite does with it. Every other file (the database, the
 * journals) is the default VFS's own, untouched.
 */
#include "store/store_int.h"

#include <sqlite3.h>
#include <string.h>

/* Gathered bytes are written once they pass this (a commit of a few hundred pages). */
#define GATHER_MAX (1024 * 1024)
/* The most one write to the default VFS may carry: SQLite's unix VFS keeps only the low 17
 * bits of a write's length (a write of 128 KB would write nothing and say the disk is full). */
#define PIECE_MAX 0x1f000

/*
 * A WAL file: the default VFS's file (real, in the memory right after this struct) and the
 * bytes gathered for it. Invariant: len == 0, or buf holds the len bytes SQLite wrote at
 * offsets at, at + 1, ..., at + len - 1 and the file does not have them yet.
 */
struct wal_file {
    sqlite3_file base; /* must come first: SQLite sees this */
    sqlite3_file *real;
    unsigned char *buf;
    size_t len, cap;
    sqlite3_int64 at;
};

static sqlite3_vfs *under; /* the default VFS when rein_store_sqlite_vfs() first ran */

/* Writes what is gathered; afterwards nothing is, whatever the outcome. */
static int put_gathered(struct wal_file *f)
{
    int rc = SQLITE_OK;

    for (size_t done = 0; done < f->len && rc == SQLITE_OK;) {
        size_t n = f->len - done < PIECE_MAX ? f->len - done : PIECE_MAX;

        rc = f->real->pMethods->xWrite(f->real, f->buf + done, (int)n, f->at + (sqlite3_int64)done);
        done += n;
    }
    f->len = 0;
    return rc;
}

static int wal_close(sqlite3_file *file)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f), rc2;

    rein_free(f->buf);
    f->buf = NULL;
    f->cap = 0;
    rc2 = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wal_read(sqlite3_file *file, void *dst, int n, sqlite3_int64 off)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    return rc != SQLITE_OK ? rc : f->real->pMethods->xRead(f->real, dst, n, off);
}

/* Room for need more bytes; false when there is none (the caller writes directly). */
static bool reserve(struct wal_file *f, size_t need)
{
    size_t cap = f->cap ? f->cap : 64 * 1024;
    unsigned char *p;

    if (f->len + need <= f->cap)
        return true;
    while (cap < f->len + need)
        cap *= 2;
    if (cap > GATHER_MAX)
        return false;
    p = rein_realloc(f->buf, cap);
    if (!p)
        return false;
    f->buf = p;
    f->cap = cap;
    return true;
}

static int wal_write(sqlite3_file *file, const void *src, int n, sqlite3_int64 off)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc;

    /* Rewriting bytes still gathered (SQLite rewrites a frame of the open transaction when
     * the same page changes again): in place. */
    if (f->len && off >= f->at && off + n <= f->at + (sqlite3_int64)f->len) {
        memcpy(f->buf + (off - f->at), src, (size_t)n);
        return SQLITE_OK;
    }
    if (f->len && off == f->at + (sqlite3_int64)f->len && reserve(f, (size_t)n)) {
        memcpy(f->buf + f->len, src, (size_t)n);
        f->len += (size_t)n;
        return SQLITE_OK;
    }
    rc = put_gathered(f);
    if (rc != SQLITE_OK)
        return rc;
    if (!reserve(f, (size_t)n))
        return f->real->pMethods->xWrite(f->real, src, n, off);
    memcpy(f->buf, src, (size_t)n);
    f->len = (size_t)n;
    f->at = off;
    return SQLITE_OK;
}

static int wal_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int wal_sync(sqlite3_file *file, int flags)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    return rc != SQLITE_OK ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int wal_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int wal_lock(sqlite3_file *file, int lock)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xLock(f->real, lock);
}

static int wal_unlock(sqlite3_file *file, int lock)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xUnlock(f->real, lock);
}

static int wal_check_reserved(sqlite3_file *file, int *out)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

/* A file control may look at the file (its size, its descriptor): it sees every write. */
static int wal_file_control(sqlite3_file *file, int op, void *arg)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    return rc != SQLITE_OK ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wal_sector_size(sqlite3_file *file)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xSectorSize(f->real);
}

static int wal_device(sqlite3_file *file)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* The WAL file has no shared memory or mapping of its own (those are the database file's);
 * passed on for completeness. */
static int wal_shm_map(sqlite3_file *file, int pg, int pgsz, int extend, void volatile **pp)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, pp);
}

static int wal_shm_lock(sqlite3_file *file, int ofst, int n, int flags)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xShmLock(f->real, ofst, n, flags);
}

static void wal_shm_barrier(sqlite3_file *file)
{
    struct wal_file *f = (struct wal_file *)file;

    f->real->pMethods->xShmBarrier(f->real);
}

static int wal_shm_unmap(sqlite3_file *file, int del)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xShmUnmap(f->real, del);
}

static int wal_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **pp)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc = put_gathered(f);

    if (rc != SQLITE_OK)
        return rc;
    return f->real->pMethods->xFetch(f->real, off, n, pp);
}

static int wal_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
    struct wal_file *f = (struct wal_file *)file;

    return f->real->pMethods->xUnfetch(f->real, off, p);
}

static const sqlite3_io_methods wal_methods = {
    .iVersion = 3,
    .xClose = wal_close,
    .xRead = wal_read,
    .xWrite = wal_write,
    .xTruncate = wal_truncate,
    .xSync = wal_sync,
    .xFileSize = wal_file_size,
    .xLock = wal_lock,
    .xUnlock = wal_unlock,
    .xCheckReservedLock = wal_check_reserved,
    .xFileControl = wal_file_control,
    .xSectorSize = wal_sector_size,
    .xDeviceCharacteristics = wal_device,
    .xShmMap = wal_shm_map,
    .xShmLock = wal_shm_lock,
    .xShmBarrier = wal_shm_barrier,
    .xShmUnmap = wal_shm_unmap,
    .xFetch = wal_fetch,
    .xUnfetch = wal_unfetch,
};

/* A WAL file gets the gathering methods over the default VFS's file; any other file is the
 * default VFS's own, in the same memory. */
static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
                    int *out_flags)
{
    struct wal_file *f = (struct wal_file *)file;
    int rc;

    (void)vfs;
    if (!(flags & SQLITE_OPEN_WAL))
        return under->xOpen(under, name, file, flags, out_flags);
    memset(f, 0, sizeof(*f));
    f->real = (sqlite3_file *)(f + 1);
    rc = under->xOpen(under, name, f->real, flags, out_flags);
    /* On failure SQLite calls xClose only when pMethods is set: leave it NULL, but close
     * what the default VFS may have left open. */
    if (rc != SQLITE_OK) {
        if (f->real->pMethods)
            f->real->pMethods->xClose(f->real);
        return rc;
    }
    if (f->real->pMethods->iVersion < 3) {
        /* Not the methods this VFS passes on: the file stays the default VFS's, moved to
         * where SQLite looks for it. */
        f->real->pMethods->xClose(f->real);
        return under->xOpen(under, name, file, flags, out_flags);
    }
    f->base.pMethods = &wal_methods;
    return SQLITE_OK;
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    (void)vfs;
    return under->xDelete(under, name, sync_dir);
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int what, int *out)
{
    (void)vfs;
    return under->xAccess(under, name, what, out);
}

static int vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    (void)vfs;
    return under->xFullPathname(under, name, n, out);
}

static void *vfs_dl_open(sqlite3_vfs *vfs, const char *name)
{
    (void)vfs;
    return under->xDlOpen(under, name);
}

static void vfs_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
    (void)vfs;
    under->xDlError(under, n, msg);
}

static void (*vfs_dl_sym(sqlite3_vfs *vfs, void *lib, const char *sym))(void)
{
    (void)vfs;
    return under->xDlSym(under, lib, sym);
}

static void vfs_dl_close(sqlite3_vfs *vfs, void *lib)
{
    (void)vfs;
    under->xDlClose(under, lib);
}

static int vfs_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return under->xRandomness(under, n, out);
}

static int vfs_sleep(sqlite3_vfs *vfs, int us)
{
    (void)vfs;
    return under->xSleep(under, us);
}

static int vfs_current_time(sqlite3_vfs *vfs, double *out)
{
    (void)vfs;
    return under->xCurrentTime(under, out);
}

static int vfs_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    (void)vfs;
    return under->xGetLastError ? under->xGetLastError(under, n, out) : 0;
}

static int vfs_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    double d;
    int rc;

    (void)vfs;
    if (under->iVersion >= 2 && under->xCurrentTimeInt64)
        return under->xCurrentTimeInt64(under, out);
    rc = under->xCurrentTime(under, &d);
    *out = (sqlite3_int64)(d * 86400000.0);
    return rc;
}

static sqlite3_vfs wal_vfs = {
    .iVersion = 2,
    .zName = "rein-wal",
    .xOpen = vfs_open,
    .xDelete = vfs_delete,
    .xAccess = vfs_access,
    .xFullPathname = vfs_full_pathname,
    .xDlOpen = vfs_dl_open,
    .xDlError = vfs_dl_error,
    .xDlSym = vfs_dl_sym,
    .xDlClose = vfs_dl_close,
    .xRandomness = vfs_randomness,
    .xSleep = vfs_sleep,
    .xCurrentTime = vfs_current_time,
    .xGetLastError = vfs_last_error,
    .xCurrentTimeInt64 = vfs_current_time_int64,
};

/* Once, from the store's process-wide setup (a pthread_once). */
const char *rein__store_sqlite_wal_vfs(void)
{
    if (!under) {
        under = sqlite3_vfs_find(NULL);
        if (!under)
            return NULL;
        wal_vfs.szOsFile = (int)sizeof(struct wal_file) + under->szOsFile;
        wal_vfs.mxPathname = under->mxPathname;
        if (sqlite3_vfs_register(&wal_vfs, 0) != SQLITE_OK) {
            under = NULL;
            return NULL;
        }
    }
    return wal_vfs.zName;
}
