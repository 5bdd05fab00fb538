/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare: share RDMA device contexts, protection domains, mlx5 VARs, memory
 * regions and device memory between processes through checked, versioned
 * export blobs.
 *
 * This is the only public header of librshare.so.1. Every function declared
 * here is exported under the ELF version node of the release that added it
 * (abi/rshare.map): RSHARE_1.0, or RSHARE_1.1 or RSHARE_1.2 for those
 * marked "Since 1.1" or "Since 1.2".
 * A program that uses a 1.1 function records RSHARE_1.1 in its version
 * needs, so it refuses to load on a 1.0 library instead of failing later.
 *
 * Conventions (the same for every function):
 *  - A function that can fail returns int: RSHARE_OK (0) or a negative
 *    enum rshare_status. Out parameters are written only on success.
 *  - Variable-size output is (buf, cap, len): when buf is NULL or cap is too
 *    small the call returns RSHARE_E_NOSPACE and sets *len to the size
 *    needed. Strings are NUL-terminated and *len excludes the NUL.
 *  - Handles are opaque. NULL gives RSHARE_E_INVAL. A handle that was
 *    already freed, unimported or closed gives RSHARE_E_STALE, forever:
 *    handles are generation-checked tokens, never dereferenced pointers, so
 *    a stale handle can never reach freed or reused memory. While another
 *    thread frees, unimports or closes a handle, calls on it already give
 *    RSHARE_E_STALE; should that release fail (e.g. RSHARE_E_BUSY), the
 *    handle is live again.
 *  - Every function is thread-safe. After a failure, rshare_last_error()
 *    and rshare_last_errno() explain it for the calling thread.
 *  - On sim0, calls that change the shared object table (alloc, free,
 *    register, deregister, VAR map, device memory read and write) take the
 *    table's lock. When another process holds it longer than the bound
 *    (RSHARE_SIM_LOCK_MS milliseconds, default 5000: a peer stopped inside
 *    a call) they give RSHARE_E_BUSY, rshare_last_errno() ETIMEDOUT, and
 *    change nothing.
 *  - On hardware, a failing rdma-core call gives the status of its errno:
 *    ENOMEM or ENOSPC RSHARE_E_NOMEM; EOPNOTSUPP, EPROTONOSUPPORT or ENOSYS
 *    RSHARE_E_UNSUPPORTED; EPERM or EACCES RSHARE_E_PERM; EBUSY
 *    RSHARE_E_BUSY; a shared object looked up and not there (ENOENT,
 *    EINVAL) RSHARE_E_NOT_FOUND; any other RSHARE_E_IO. The lists below
 *    name every status a function gives on sim0 and those it gives on
 *    hardware for the causes they name.
 *
 * All functions appeared in version 1.0 unless stated otherwise.
 */
#ifndef RSHARE_RSHARE_H
#define RSHARE_RSHARE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RSHARE_BUILDING_LIBRARY) && defined(__GNUC__)
#define RSHARE_API __attribute__((visibility("default")))
#else
#define RSHARE_API
#endif

#define RSHARE_VERSION_MAJOR 1
#define RSHARE_VERSION_MINOR 2
#define RSHARE_VERSION_PATCH 0
/** MAJOR * 10000 + MINOR * 100 + PATCH of this header (since 1.1); compare
 * it with rshare_version_number(), the library's, at run time. */
#define RSHARE_VERSION_NUMBER 10200

/** Status codes. The values are frozen: never renumbered, never reused. */
enum rshare_status {
	RSHARE_OK = 0,                  /**< success */
	RSHARE_E_INVAL = -1,            /**< invalid argument (NULL handle or pointer, bad flags) */
	RSHARE_E_NOMEM = -2,            /**< out of memory or out of table slots */
	RSHARE_E_NODEV = -3,            /**< no such device, or the fd is not a device context */
	RSHARE_E_UNSUPPORTED = -4,      /**< the provider or rdma-core lacks the operation */
	RSHARE_E_STALE = -5,            /**< the handle was already freed, unimported or closed */
	RSHARE_E_BUSY = -6,             /**< the object is still in use */
	RSHARE_E_NOSPACE = -7,          /**< output buffer too small; *len tells the size needed */
	RSHARE_E_BLOB_CORRUPT = -8,     /**< blob malformed: bad magic, length or checksum */
	RSHARE_E_BLOB_VERSION = -9,     /**< blob format version newer than this library */
	RSHARE_E_BLOB_KIND = -10,       /**< blob is of another kind than the call expects */
	RSHARE_E_DEVICE_MISMATCH = -11, /**< blob comes from another device or object table */
	RSHARE_E_NOT_FOUND = -12,       /**< the object no longer exists (or no such index) */
	RSHARE_E_PERM = -13,            /**< permission denied */
	RSHARE_E_IO = -14,              /**< system call failed; see rshare_last_errno() */
	RSHARE_E_PROTOCOL = -15,        /**< malformed message from a channel or broker peer */
	RSHARE_E_AGAIN = -16,           /**< would block: nothing consumed, retry when the fd is readable (since 1.2) */
	RSHARE_E_FD_MISMATCH = -19      /**< the fd is not the memory the blob describes (since 1.2) */
};

/** Device providers. */
enum rshare_provider {
	RSHARE_PROVIDER_HW = 1,  /**< real RDMA device through rdma-core */
	RSHARE_PROVIDER_SIM = 2  /**< the simulated device "sim0" */
};

/** Kinds of shared objects, as carried in blobs. */
enum rshare_kind {
	RSHARE_KIND_PD = 1,  /**< protection domain */
	RSHARE_KIND_VAR = 2, /**< mlx5 virtio access region */
	RSHARE_KIND_MR = 3,  /**< memory region (since 1.1) */
	RSHARE_KIND_DM = 4,  /**< device memory (since 1.1) */
	RSHARE_KIND_BUF = 5  /**< shared buffer: memory plus its MR (since 1.2) */
};

/** Sizes, as enum members so that FFI declarations can see them. */
enum rshare_limits {
	RSHARE_BLOB_MAX = 128,          /**< upper bound of every export blob, in bytes */
	RSHARE_TEXT_MAX = 180,          /**< upper bound of a blob's text form, NUL included */
	RSHARE_NAME_MAX = 64,           /**< upper bound of a device name, NUL included */
	RSHARE_PAYLOAD_MAX = 65536,     /**< upper bound of a channel payload, in bytes */
	RSHARE_CHANNEL_FDS_MAX = 8      /**< extra fds one channel message carries at most (since 1.2) */
};

/** The header's version as an enum member, for FFI declarations that cannot
 * see macros (since 1.1): equal to RSHARE_VERSION_NUMBER, so, unlike every
 * other enum value, it changes with each release of the header. */
enum rshare_header_version {
	RSHARE_HEADER_VERSION = 10200
};

/** VAR allocation flags (as mlx5dv_alloc_var). */
enum rshare_var_flags {
	RSHARE_VAR_FLAG_TLP = 1  /**< MLX5DV_VAR_ALLOC_FLAG_TLP */
};

/** Memory region access flags (since 1.1); the values are IBV_ACCESS_*. */
enum rshare_access {
	RSHARE_ACCESS_LOCAL_WRITE = 1,   /**< IBV_ACCESS_LOCAL_WRITE */
	RSHARE_ACCESS_REMOTE_WRITE = 2,  /**< IBV_ACCESS_REMOTE_WRITE */
	RSHARE_ACCESS_REMOTE_READ = 4,   /**< IBV_ACCESS_REMOTE_READ */
	RSHARE_ACCESS_REMOTE_ATOMIC = 8  /**< IBV_ACCESS_REMOTE_ATOMIC */
};

/** What a device can do (since 1.1): bits of rshare_device_caps(). */
enum rshare_caps {
	RSHARE_CAP_PD = 1,      /**< PDs: alloc, export, import */
	RSHARE_CAP_VAR = 2,     /**< VARs: alloc, export, import, map */
	RSHARE_CAP_MR = 4,      /**< memory regions: register, export, import */
	RSHARE_CAP_DM = 8,      /**< device memory: alloc, export, import, read, write */
	RSHARE_CAP_NATIVE = 16, /**< native rdma-core objects (rshare_*_native) */
	/** Since 1.2. The context has a ledger: a blob of an object freed
	 * through rshare is refused even when the kernel reused its handle
	 * and everything it reports (docs/hardware.md, "Checking levels").
	 * Hardware contexts opened by rshare or received over a channel or
	 * broker have it; one imported from a bare fd does not. sim0's table
	 * checks serials itself and does not report it. */
	RSHARE_CAP_LEDGER = 32,
	RSHARE_CAP_BUF = 64,    /**< shared buffers: alloc, export, import (since 1.2) */
	RSHARE_CAP_DM_MAP = 128 /**< device memory mapped into the process: rshare_dm_map (since 1.2) */
};

/** The fields rshare_blob_field() reads (since 1.1). Which kinds carry
 * which field: abi/BLOB-FORMAT.md. */
enum rshare_field {
	RSHARE_FIELD_KIND = 1,      /**< enum rshare_kind (every blob) */
	RSHARE_FIELD_PROVIDER = 2,  /**< enum rshare_provider (every blob) */
	RSHARE_FIELD_GUID = 3,      /**< device node GUID (every blob) */
	RSHARE_FIELD_TABLE = 4,     /**< object table identity, 0 if unknowable (every blob) */
	RSHARE_FIELD_HANDLE = 5,    /**< the object's kernel handle (every blob) */
	RSHARE_FIELD_SERIAL = 6,    /**< tells a live object from a freed one (sim0: creation serial; hardware PD: mlx5 PD number + 1; hardware VAR: a nonce), 0 if unknowable (every blob) */
	RSHARE_FIELD_PAGE_ID = 7,   /**< VAR page id (VAR) */
	RSHARE_FIELD_LENGTH = 8,    /**< VAR page length, MR length, DM length (VAR, MR, DM) */
	RSHARE_FIELD_MMAP_OFF = 9,  /**< VAR mmap offset (VAR) */
	RSHARE_FIELD_PD_HANDLE = 10, /**< kernel handle of the MR's PD (MR) */
	RSHARE_FIELD_PD_SERIAL = 11, /**< creation serial of the MR's PD (MR) */
	RSHARE_FIELD_ADDR = 12,     /**< the registering process's start address (MR) */
	RSHARE_FIELD_LKEY = 13,     /**< local key (MR) */
	RSHARE_FIELD_RKEY = 14,     /**< remote key (MR) */
	RSHARE_FIELD_ACCESS = 15,   /**< RSHARE_ACCESS_* flags (MR) */
	RSHARE_FIELD_MEM_DEV = 16,  /**< st_dev of the buffer's memfd (buffer, since 1.2) */
	RSHARE_FIELD_MEM_INO = 17,  /**< st_ino of the buffer's memfd (buffer, since 1.2) */
	/** Since 1.2. The ledger serial the blob carries: hardware blobs of
	 * every kind made in a context with a ledger (RSHARE_CAP_LEDGER;
	 * abi/BLOB-FORMAT.md, "Ledger serial"). A blob without one (sim0, a
	 * context without a ledger) answers RSHARE_E_NOT_FOUND. */
	RSHARE_FIELD_LEDGER = 18
};

/** An open or imported device context. Opaque. */
typedef struct rshare_device rshare_device;
/** A protection domain handle, allocated or imported. Opaque. */
typedef struct rshare_pd rshare_pd;
/** A VAR handle, allocated or imported. Opaque. */
typedef struct rshare_var rshare_var;
/** A memory region handle, registered or imported (since 1.1). Opaque. */
typedef struct rshare_mr rshare_mr;
/** A device memory handle, allocated or imported (since 1.1). Opaque. */
typedef struct rshare_dm rshare_dm;
/** A shared buffer handle, allocated or imported (since 1.2). Opaque. */
typedef struct rshare_buf rshare_buf;

/* ------------------------------------------------------------------ */
/* Library                                                              */
/* ------------------------------------------------------------------ */

/**
 * The library version, "MAJOR.MINOR.PATCH" (e.g. "1.0.0").
 * Returns a static string; never fails.
 */
RSHARE_API const char *rshare_version(void);

/**
 * The library's version as MAJOR * 10000 + MINOR * 100 + PATCH (10200 for
 * 1.2.0), to compare with the RSHARE_VERSION_NUMBER a program was built
 * with: a library at least as new as the header offers everything the
 * header declares. Never fails. Since 1.1.
 */
RSHARE_API int rshare_version_number(void);

/**
 * The name of an enum rshare_kind value: "pd", "var", "mr", "dm" (the kind
 * as rshare_blob_describe() and the bindings name it). Returns a static
 * string; NULL for a value this library does not know. Since 1.2.
 */
RSHARE_API const char *rshare_kind_name(int kind);

/**
 * The name of an enum rshare_provider value: "hw", "sim". Returns a static
 * string; NULL for a value this library does not know. Since 1.2.
 */
RSHARE_API const char *rshare_provider_name(int provider);

/**
 * The symbolic name of a status, e.g. "RSHARE_E_STALE".
 * Returns a static string; "RSHARE_E_UNKNOWN" for a value that is not a status.
 */
RSHARE_API const char *rshare_status_name(int status);

/**
 * A one-line description of a status.
 * Returns a static string; a generic text for a value that is not a status.
 */
RSHARE_API const char *rshare_strerror(int status);

/**
 * The calling thread's last failure: the function, the cause and, where an
 * OS call failed, its errno text. "" if this thread has had no failure.
 * A successful call does not clear it. The string is thread-local and valid
 * until this thread's next rshare call. Never fails.
 */
RSHARE_API const char *rshare_last_error(void);

/**
 * The OS errno behind the calling thread's last failure, 0 if none or if
 * the failure was not caused by an OS call. Never fails.
 */
RSHARE_API int rshare_last_errno(void);

/* ------------------------------------------------------------------ */
/* Devices                                                              */
/* ------------------------------------------------------------------ */

/**
 * Re-scan the devices and store how many there are in *count. Hardware
 * devices come first, then the simulated "sim0" (unless RSHARE_SIM=0 is set
 * in the environment).
 * Returns RSHARE_OK, or RSHARE_E_INVAL if count is NULL.
 */
RSHARE_API int rshare_devices_count(size_t *count);

/**
 * Describe device number index of the last scan (scanning first if none was
 * made). name receives the NUL-terminated device name (RSHARE_NAME_MAX bytes
 * always suffice); pass name NULL and cap 0 to skip the name. guid and
 * provider (an enum rshare_provider) may be NULL.
 * Returns RSHARE_OK; RSHARE_E_NOT_FOUND if index is past the end;
 * RSHARE_E_NOSPACE if cap is too small; RSHARE_E_INVAL for NULL name with cap > 0.
 */
RSHARE_API int rshare_devices_get(size_t index, char *name, size_t cap,
				  uint64_t *guid, int *provider);

/**
 * Open a new device context. name NULL or "" opens the first hardware
 * device, or "sim0" when there is none. Opening "sim0" creates a new
 * simulated object table (like a new kernel ufile): objects are shared only
 * with contexts imported from this one's fd.
 * On success *out is a new handle; close it with rshare_device_close().
 * Returns RSHARE_OK; RSHARE_E_INVAL (out NULL); RSHARE_E_NODEV (no such
 * device); RSHARE_E_NOMEM; RSHARE_E_IO; RSHARE_E_PERM.
 */
RSHARE_API int rshare_device_open(const char *name, rshare_device **out);

/**
 * Import a device context shared by another process (its command fd,
 * received by SCM_RIGHTS, inheritance or dup). The fd is duplicated: the
 * caller keeps and eventually closes its own fd (failure messages name it,
 * never the duplicate).
 * Returns RSHARE_OK; RSHARE_E_INVAL (out NULL, fd < 0 or not open);
 * RSHARE_E_NODEV (the fd is not a simulated or RDMA device context);
 * RSHARE_E_NOMEM; RSHARE_E_PERM (hardware); RSHARE_E_IO.
 */
RSHARE_API int rshare_device_import(int fd, rshare_device **out);

/**
 * The device's command fd, to pass to other processes. The fd is borrowed:
 * it stays owned by dev and is closed by rshare_device_close().
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_device_fd(const rshare_device *dev, int *fd);

/**
 * The device name (e.g. "sim0"), with the (buf, cap, len) convention.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_device_name(const rshare_device *dev, char *buf,
				  size_t cap, size_t *len);

/**
 * The device's node GUID (host order).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_device_guid(const rshare_device *dev, uint64_t *guid);

/**
 * The device's provider, an enum rshare_provider.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_device_provider(const rshare_device *dev, int *provider);

/**
 * What the device and the loaded rdma-core can do: a mask of enum
 * rshare_caps bits, so a program can ask instead of trying and catching
 * RSHARE_E_UNSUPPORTED. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (caps NULL or dev NULL); RSHARE_E_STALE.
 */
RSHARE_API int rshare_device_caps(const rshare_device *dev, uint32_t *caps);

/**
 * The native rdma-core context behind dev: a struct ibv_context *, stored
 * in *ibv_context. Borrowed: owned by dev, valid until rshare_device_close();
 * never close it yourself. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_NATIVE, such as sim0).
 */
RSHARE_API int rshare_device_native(const rshare_device *dev, void **ibv_context);

/**
 * Close the context and its fd. Objects stay alive for other processes that
 * share the context; the provider destroys them when the last fd closes.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE (already closed);
 * RSHARE_E_BUSY while PDs, VARs or device memory (and so MRs) made or
 * imported through dev are live in this process, or while another thread is inside a call on dev (a blocked
 * rshare_channel_send() included); the device then stays open.
 * In a child made by fork(), which inherits the parent's handles: closing
 * an inherited device first releases, in the child only, every PD, VAR, MR
 * and DM of it that the child inherited (unimported as by the
 * rshare_*_unimport functions, VAR pages unmapped in the child; nothing is
 * freed, the parent's objects stay live and usable), then closes the
 * child's copy of the context. Objects the child made itself still give
 * RSHARE_E_BUSY. Calls other threads of the parent were making at the fork
 * hold nothing in the child.
 */
RSHARE_API int rshare_device_close(rshare_device *dev);

/* ------------------------------------------------------------------ */
/* Protection domains                                                   */
/* ------------------------------------------------------------------ */

/**
 * Allocate a PD on dev. On success *out is a new handle.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE (dev); RSHARE_E_NOMEM;
 * RSHARE_E_BUSY (sim0's table lock, above); RSHARE_E_IO; RSHARE_E_PERM.
 */
RSHARE_API int rshare_pd_alloc(rshare_device *dev, rshare_pd **out);

/**
 * Export pd as a blob (at most RSHARE_BLOB_MAX bytes) with the (buf, cap,
 * len) convention. The blob names the device, the object table and the
 * kernel handle; any process sharing the context can import it.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_pd_export(const rshare_pd *pd, void *buf, size_t cap,
				size_t *len);

/**
 * Import the PD described by blob (len bytes) into dev. The blob is fully
 * validated first. On success *out is a new handle.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE (dev);
 * RSHARE_E_BLOB_CORRUPT; RSHARE_E_BLOB_VERSION; RSHARE_E_BLOB_KIND (not a
 * PD blob); RSHARE_E_DEVICE_MISMATCH (another device or object table);
 * RSHARE_E_NOT_FOUND (the PD was freed); RSHARE_E_UNSUPPORTED (hardware:
 * rdma-core without ibv_import_pd); RSHARE_E_NOMEM; RSHARE_E_IO.
 */
RSHARE_API int rshare_pd_import(rshare_device *dev, const void *blob,
				size_t len, rshare_pd **out);

/**
 * Release this process's handle without touching the shared object (valid
 * on allocated and imported PDs alike, also after another process freed it).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_BUSY (since
 * 1.1: MRs of this process are still live in it; it stays usable).
 */
RSHARE_API int rshare_pd_unimport(rshare_pd *pd);

/**
 * Destroy the PD for every process and release the handle.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOT_FOUND
 * (the object was already destroyed by another process: the handle stays
 * valid, release it with rshare_pd_unimport()); RSHARE_E_BUSY (MRs of
 * this process live in it, since 1.1 MRs registered on it in any process,
 * or sim0's table lock; the PD stays live and usable); RSHARE_E_IO.
 */
RSHARE_API int rshare_pd_free(rshare_pd *pd);

/**
 * The PD's kernel handle (meaningful only within its object table).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_pd_handle(const rshare_pd *pd, uint32_t *handle);

/**
 * The native rdma-core PD behind pd: a struct ibv_pd *, stored in *ibv_pd
 * (use it with ibv_reg_mr, ibv_create_qp, ...). Borrowed: valid until pd is
 * unimported or freed; never deallocate it yourself. Since 1.1.
 * Parent domains: free any ibv_alloc_parent_domain() made over it before
 * rshare_pd_unimport() (or closing a forked child's inherited device,
 * which unimports): mlx5's unimport of a PD that still carries a parent
 * domain fails and asserts (providers/mlx5/verbs.c mlx5_unimport_pd),
 * aborting the process in rdma-core builds without NDEBUG.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_NATIVE, such as sim0).
 */
RSHARE_API int rshare_pd_native(const rshare_pd *pd, void **ibv_pd);

/* ------------------------------------------------------------------ */
/* VARs                                                                 */
/* ------------------------------------------------------------------ */

/**
 * Allocate a VAR on dev; flags is 0 or RSHARE_VAR_FLAG_TLP.
 * Returns RSHARE_OK; RSHARE_E_INVAL (unknown flags); RSHARE_E_STALE;
 * RSHARE_E_NOMEM (no free VAR page); RSHARE_E_UNSUPPORTED (device without
 * VARs); RSHARE_E_BUSY (sim0's table lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_var_alloc(rshare_device *dev, uint32_t flags,
				rshare_var **out);

/**
 * Export var as a blob, with the (buf, cap, len) convention.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE;
 * RSHARE_E_UNSUPPORTED (rdma-core without VAR export).
 */
RSHARE_API int rshare_var_export(const rshare_var *var, void *buf, size_t cap,
				 size_t *len);

/**
 * Import the VAR described by blob into dev; statuses as rshare_pd_import(),
 * plus RSHARE_E_UNSUPPORTED (rdma-core without VAR import).
 */
RSHARE_API int rshare_var_import(rshare_device *dev, const void *blob,
				 size_t len, rshare_var **out);

/**
 * Unmap (if mapped) and release this process's handle; the object lives on.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_var_unimport(rshare_var *var);

/**
 * Unmap (if mapped), destroy the VAR for every process and release the
 * handle. Statuses as rshare_pd_free() (BUSY only for sim0's table lock).
 */
RSHARE_API int rshare_var_free(rshare_var *var);

/**
 * The VAR's attributes: its page id, the length of its page and the offset
 * at which the page is mapped through the device fd. Any of the three
 * pointers may be NULL.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_var_attrs(const rshare_var *var, uint32_t *page_id,
				uint32_t *length, uint64_t *mmap_off);

/**
 * The VAR's kernel handle (meaningful only within its object table).
 * Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_var_handle(const rshare_var *var, uint32_t *handle);

/**
 * The native object behind var: a struct mlx5dv_var *, stored in
 * *mlx5dv_var. Borrowed: valid until var is unimported or freed. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_NATIVE, such as sim0).
 */
RSHARE_API int rshare_var_native(const rshare_var *var, void **mlx5dv_var);

/**
 * Map the VAR page (length bytes, read-write, shared) through the device
 * fd and store its address in *addr. Repeated calls return the same address
 * until rshare_var_unmap(). Writes are seen by every process that maps it.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_BUSY (sim0's
 * table lock); RSHARE_E_IO (mmap, or the VAR was freed by another process:
 * rshare_last_errno() ESTALE).
 */
RSHARE_API int rshare_var_map(rshare_var *var, void **addr);

/**
 * Unmap the VAR page; a no-op when it is not mapped. The address returned
 * by rshare_var_map() must not be used afterwards.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_var_unmap(rshare_var *var);

/* ------------------------------------------------------------------ */
/* Memory regions (since 1.1)                                           */
/* ------------------------------------------------------------------ */

/**
 * Register [addr, addr + length) on pd with access, a mask of
 * RSHARE_ACCESS_* flags (the IBV_ACCESS_* values). The memory stays the
 * caller's: keep it allocated until the MR is deregistered. The MR lives in
 * pd: while it is live in this process, rshare_pd_unimport() and
 * rshare_pd_free() of pd answer RSHARE_E_BUSY. On success *out is a new
 * handle. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (NULL addr or out, length 0, unknown
 * access flags); RSHARE_E_STALE (pd); RSHARE_E_NOT_FOUND (the PD was freed,
 * e.g. by another process); RSHARE_E_UNSUPPORTED (a device without
 * RSHARE_CAP_MR); RSHARE_E_NOMEM; RSHARE_E_PERM; RSHARE_E_BUSY (sim0's table
 * lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_mr_reg(rshare_pd *pd, void *addr, size_t length,
			     uint32_t access, rshare_mr **out);

/**
 * Export mr as a blob (at most RSHARE_BLOB_MAX bytes) with the (buf, cap,
 * len) convention. The blob names its PD (handle and serial), so it can only
 * be imported into that PD. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_mr_export(const rshare_mr *mr, void *buf, size_t cap,
				size_t *len);

/**
 * Import the MR described by blob into pd (as ibv_import_mr: an MR is
 * imported into the PD it was registered on, itself imported first). The
 * blob is fully validated first. The imported MR's address is the
 * registering process's (meaningless in this one, as on hardware); its keys
 * are the shared registration's. On success *out is a new handle, which
 * keeps pd busy as rshare_mr_reg() does. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE (pd);
 * RSHARE_E_BLOB_CORRUPT; RSHARE_E_BLOB_VERSION; RSHARE_E_BLOB_KIND (not an
 * MR blob); RSHARE_E_DEVICE_MISMATCH (another device or object table, or
 * the MR is registered on another PD than pd); RSHARE_E_NOT_FOUND (the MR
 * was deregistered); RSHARE_E_UNSUPPORTED; RSHARE_E_NOMEM; RSHARE_E_IO.
 */
RSHARE_API int rshare_mr_import(rshare_pd *pd, const void *blob, size_t len,
				rshare_mr **out);

/**
 * Release this process's MR handle without touching the shared
 * registration. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_mr_unimport(rshare_mr *mr);

/**
 * Deregister the MR for every process and release the handle; later imports
 * anywhere give RSHARE_E_NOT_FOUND. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOT_FOUND
 * (already deregistered by another process: release the handle with
 * rshare_mr_unimport()); RSHARE_E_BUSY (sim0's table lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_mr_dereg(rshare_mr *mr);

/**
 * The MR's attributes: start address (the registering process's), length,
 * local and remote keys, access flags. Any pointer may be NULL. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (mr NULL); RSHARE_E_STALE.
 */
RSHARE_API int rshare_mr_attrs(const rshare_mr *mr, uint64_t *addr,
			       uint64_t *length, uint32_t *lkey,
			       uint32_t *rkey, uint32_t *access);

/**
 * The MR's kernel handle (meaningful only within its object table).
 * Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_mr_handle(const rshare_mr *mr, uint32_t *handle);

/**
 * The native rdma-core MR behind mr: a struct ibv_mr *, stored in *ibv_mr.
 * Borrowed: valid until mr is unimported or deregistered. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_NATIVE, such as sim0).
 */
RSHARE_API int rshare_mr_native(const rshare_mr *mr, void **ibv_mr);

/* ------------------------------------------------------------------ */
/* Device memory (since 1.1)                                            */
/* ------------------------------------------------------------------ */

/**
 * Allocate length bytes of device memory (on-chip memory of the NIC; on
 * sim0 a fixed device-wide budget in the shared table). Its contents are
 * reached with rshare_dm_write()/rshare_dm_read(), from every process that
 * imports it. On success *out is a new handle. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (out NULL, length 0); RSHARE_E_STALE
 * (dev); RSHARE_E_NOMEM (the device memory is used up); RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_DM); RSHARE_E_BUSY (sim0's table lock);
 * RSHARE_E_IO.
 */
RSHARE_API int rshare_dm_alloc(rshare_device *dev, uint64_t length,
			       rshare_dm **out);

/**
 * Export dm as a blob, with the (buf, cap, len) convention. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_dm_export(const rshare_dm *dm, void *buf, size_t cap,
				size_t *len);

/**
 * Import the device memory described by blob into dev; statuses as
 * rshare_pd_import(), plus RSHARE_E_UNSUPPORTED. Since 1.1.
 */
RSHARE_API int rshare_dm_import(rshare_device *dev, const void *blob,
				size_t len, rshare_dm **out);

/**
 * Release this process's handle; the memory lives on. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_dm_unimport(rshare_dm *dm);

/**
 * Free the device memory for every process and release the handle.
 * Statuses as rshare_pd_free() (BUSY only for sim0's table lock). Since 1.1.
 */
RSHARE_API int rshare_dm_free(rshare_dm *dm);

/**
 * The device memory's length in bytes. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_dm_length(const rshare_dm *dm, uint64_t *length);

/**
 * Copy len bytes from src into the device memory at offset. Bounds-checked
 * (overflow-safe): a range past the end writes nothing. len 0 is a no-op
 * (src may then be NULL). Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (NULL src with len > 0, range past the
 * end); RSHARE_E_STALE; RSHARE_E_NOT_FOUND (freed by another process);
 * RSHARE_E_BUSY (sim0's table lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_dm_write(rshare_dm *dm, uint64_t offset, const void *src,
			       size_t len);

/**
 * Copy len bytes of the device memory at offset into dst; bounds-checked as
 * rshare_dm_write() (dst untouched on failure, but for RSHARE_E_IO, after
 * which its contents are unspecified). Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOT_FOUND;
 * RSHARE_E_BUSY (sim0's table lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_dm_read(rshare_dm *dm, uint64_t offset, void *dst,
			      size_t len);

/**
 * The device memory's kernel handle (meaningful only within its object
 * table). Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_dm_handle(const rshare_dm *dm, uint32_t *handle);

/**
 * The native rdma-core device memory behind dm: a struct ibv_dm *, stored in
 * *ibv_dm. Borrowed: valid until dm is unimported or freed. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED
 * (a device without RSHARE_CAP_NATIVE, such as sim0).
 */
RSHARE_API int rshare_dm_native(const rshare_dm *dm, void **ibv_dm);

/**
 * Map dm's memory into this process, read-write and shared with every
 * process that maps it: *addr gets the address of its first byte (length:
 * rshare_dm_length()). Repeated calls give the same address until
 * rshare_dm_unmap(); unimport and free unmap it too. Where the device
 * allows it (RSHARE_CAP_DM_MAP: sim0, whose device memory is its memfd;
 * mlx5, whose own mapping of the DM this is, made when it was allocated or
 * imported: device memory, to be accessed in aligned 4-byte words, and
 * kept until unimport or free, rshare_dm_unmap only forgetting it);
 * RSHARE_E_UNSUPPORTED elsewhere, rshare_dm_read/write working all the
 * same. A mapping kept after another process freed the DM stays valid and
 * is never given to new device memory while it lives. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_UNSUPPORTED;
 * RSHARE_E_NOT_FOUND (the DM was freed); RSHARE_E_BUSY (sim0's table
 * lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_dm_map(rshare_dm *dm, void **addr);

/**
 * Unmap what rshare_dm_map() mapped (a no-op when nothing is); the address
 * must not be used afterwards. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_dm_unmap(rshare_dm *dm);

/* ------------------------------------------------------------------ */
/* Shared buffers (since 1.2)                                           */
/* ------------------------------------------------------------------ */

/*
 * A shared buffer is memory in a sealed memfd plus one MR over it on a PD:
 * N processes work on ONE piece of memory, registered ONCE, each touching
 * its bytes and posting work on it with the same keys. The allocator
 * registers the MR over its own mapping; importers receive the blob and the
 * memfd (rshare_channel_sendv() carries both), map the same pages and
 * import the MR (hardware: ibv_import_mr). Work requests use the MR's
 * registered address, the allocator's: rshare_mr_attrs() of
 * rshare_buf_mr() gives it, and an importer turns its own pointer p into
 * that address as addr + (p - ptr), ptr being rshare_buf_ptr()'s.
 * rshare_buf_free() deregisters the MR for every process; the memory lives
 * until the last process unmaps it (unimport or free) and closes its fd.
 * Needs RSHARE_CAP_BUF (every device that shares MRs).
 */

/**
 * Allocate a shared buffer of len bytes (zeroed) on pd: a memfd sealed
 * against resizing, mapped read-write into this process, and an MR with
 * access (RSHARE_ACCESS_* flags) registered over that mapping. The buffer
 * keeps pd busy as an MR does. On success *out is a new handle. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL (out NULL, len 0, unknown access
 * flags); RSHARE_E_STALE (pd); RSHARE_E_NOT_FOUND (the PD was freed);
 * RSHARE_E_UNSUPPORTED (a device without RSHARE_CAP_BUF); RSHARE_E_NOMEM
 * (no memory for the memfd or the mapping); RSHARE_E_PERM; RSHARE_E_BUSY
 * (sim0's table lock); RSHARE_E_IO.
 */
RSHARE_API int rshare_buf_alloc(rshare_pd *pd, size_t len, uint32_t access, rshare_buf **out);

/**
 * Export buf as a blob (at most RSHARE_BLOB_MAX bytes) with the (buf, cap,
 * len) convention: the MR's fields plus the memfd's size and identity.
 * Send it with the memfd (rshare_buf_fd()). Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_buf_export(const rshare_buf *buf, void *blob, size_t cap, size_t *len);

/**
 * The buffer's memfd, stored in *fd. Borrowed: owned by buf, valid until
 * it is unimported or freed; never close it yourself (dup it to keep it).
 * Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_buf_fd(const rshare_buf *buf, int *fd);

/**
 * Import a buffer from its blob and its memfd fd into pd, the PD it was
 * allocated on (imported first): fd is checked to be the buffer's memory
 * (a memfd sealed against resizing and not against writes, of the blob's
 * size and inode), duplicated (the caller keeps fd) and mapped, and the
 * MR imported. On success *out is a new handle. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL (NULL blob or out, fd negative or not
 * open); RSHARE_E_STALE (pd); RSHARE_E_BLOB_CORRUPT; RSHARE_E_BLOB_VERSION;
 * RSHARE_E_BLOB_KIND (not a buffer blob); RSHARE_E_DEVICE_MISMATCH
 * (another device or table, or another PD than the buffer's);
 * RSHARE_E_FD_MISMATCH (fd is not the buffer's memory: a regular file,
 * another memfd, another size; the message says which); RSHARE_E_NOT_FOUND
 * (the buffer was freed); RSHARE_E_UNSUPPORTED; RSHARE_E_NOMEM;
 * RSHARE_E_IO.
 */
RSHARE_API int rshare_buf_import(rshare_pd *pd, const void *blob, size_t len, int fd,
				 rshare_buf **out);

/**
 * This process's mapping of the buffer: its address in *ptr and, when len
 * is not NULL, its size in *len. Valid until the buffer is unimported or
 * freed here. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL (buf or ptr NULL); RSHARE_E_STALE.
 */
RSHARE_API int rshare_buf_ptr(const rshare_buf *buf, void **ptr, size_t *len);

/**
 * The buffer's MR, stored in *mr: for its keys and registered address
 * (rshare_mr_attrs()), its handle and its native struct ibv_mr. Borrowed:
 * valid until the buffer is unimported or freed; releasing it directly
 * (rshare_mr_unimport/dereg) answers RSHARE_E_BUSY. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_buf_mr(const rshare_buf *buf, rshare_mr **mr);

/**
 * Release this process's handle: the MR is unimported, the memory
 * unmapped here and the fd closed; the buffer stays for the others. The
 * handle becomes stale. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE.
 */
RSHARE_API int rshare_buf_unimport(rshare_buf *buf);

/**
 * Deregister the buffer's MR for every process (a later import answers
 * RSHARE_E_NOT_FOUND), then unmap it here and close the fd; the memory
 * itself lives until the last process unmaps it. The handle becomes stale.
 * Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOT_FOUND
 * (another process freed it: unimport it instead); RSHARE_E_BUSY (sim0's
 * table lock; the buffer stays live); RSHARE_E_IO.
 */
RSHARE_API int rshare_buf_free(rshare_buf *buf);

/* ------------------------------------------------------------------ */
/* Blobs (byte layout: abi/BLOB-FORMAT.md)                              */
/* ------------------------------------------------------------------ */

/**
 * Validate blob fully (length, magic, version, checksum, fields) and store
 * its enum rshare_kind in *kind.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_BLOB_CORRUPT;
 * RSHARE_E_BLOB_VERSION; RSHARE_E_BLOB_KIND (since 1.1: a well-formed blob
 * of a kind this library does not know, from a newer library; 1.0 answered
 * RSHARE_E_BLOB_CORRUPT).
 */
RSHARE_API int rshare_blob_kind(const void *blob, size_t len, int *kind);

/**
 * The length of the blob that starts at buf, of which avail bytes are
 * readable, in *len: for splitting a payload of concatenated blobs (what
 * the broker and the channel carry) without reading byte offsets. Checks
 * the framing only (the magic, and a length field that is at least a
 * blob's and at most avail); validate each piece with rshare_blob_kind()
 * or an import. Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL (buf or len NULL);
 * RSHARE_E_BLOB_CORRUPT (fewer bytes than a blob, not a blob, or a length
 * beyond avail).
 */
RSHARE_API int rshare_blob_size(const void *buf, size_t avail, size_t *len);

/**
 * Read one field of a valid blob (validated in full first) into *value:
 * field is an enum rshare_field. Since 1.1.
 * Returns RSHARE_OK; RSHARE_E_INVAL (value NULL, unknown field);
 * RSHARE_E_BLOB_CORRUPT; RSHARE_E_BLOB_VERSION; RSHARE_E_BLOB_KIND (a kind
 * this library does not know); RSHARE_E_NOT_FOUND (the blob's kind has no
 * such field, e.g. RSHARE_FIELD_PAGE_ID of a PD, or RSHARE_FIELD_LEDGER of
 * a blob that carries no ledger serial).
 */
RSHARE_API int rshare_blob_field(const void *blob, size_t len, int field,
				 uint64_t *value);

/**
 * Describe a valid blob as a one-line JSON object (keys: format, kind,
 * provider, guid, table, handle, serial; for VARs page_id, length and
 * mmap_off; for MRs (since 1.1) pd_handle, pd_serial, addr, length, lkey,
 * rkey and access; for device memory (since 1.1) length; for buffers
 * (since 1.2) the MR's and mem_dev, mem_ino; then (since 1.2) ledger when
 * the blob carries a ledger serial (RSHARE_FIELD_LEDGER); then private_len
 * and size; at most 512 bytes with the NUL), with
 * the (buf, cap, out_len) convention. Statuses as rshare_blob_kind(), plus
 * RSHARE_E_NOSPACE.
 */
RSHARE_API int rshare_blob_describe(const void *blob, size_t len, char *buf,
				    size_t cap, size_t *out_len);

/**
 * The text form of a valid blob: "rshare:" followed by unpadded base64url,
 * safe in environment variables, command lines and JSON (at most
 * RSHARE_TEXT_MAX bytes with the NUL). Statuses as rshare_blob_describe().
 */
RSHARE_API int rshare_blob_to_text(const void *blob, size_t len, char *buf,
				   size_t cap, size_t *out_len);

/**
 * Decode a NUL-terminated text form back to the blob bytes, with the (buf,
 * cap, out_len) convention, and validate the result.
 * Returns RSHARE_OK; RSHARE_E_INVAL (text NULL, no "rshare:" prefix, bad
 * base64url); RSHARE_E_NOSPACE; RSHARE_E_BLOB_CORRUPT; RSHARE_E_BLOB_VERSION;
 * RSHARE_E_BLOB_KIND (since 1.1: as rshare_blob_kind()).
 */
RSHARE_API int rshare_blob_from_text(const char *text, void *buf, size_t cap,
				     size_t *out_len);

/* ------------------------------------------------------------------ */
/* Channel: a device fd plus a payload over a connected AF_UNIX socket   */
/* ------------------------------------------------------------------ */

/**
 * Send dev's command fd (SCM_RIGHTS) and len bytes of payload (at most
 * RSHARE_PAYLOAD_MAX; payload may be NULL when len is 0) as one message
 * over sock, a connected AF_UNIX stream or seqpacket socket. Since 1.2 a
 * context with a ledger (RSHARE_CAP_LEDGER) sends the ledger's fd after its
 * command fd; a 1.1 receiver refuses that message with RSHARE_E_PROTOCOL
 * (docs/hardware.md, "Checking levels").
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_IO.
 */
RSHARE_API int rshare_channel_send(int sock, const rshare_device *dev,
				   const void *payload, size_t len);

/**
 * Receive one message sent by rshare_channel_send(): import its device fd
 * into a new handle *dev and copy its payload to payload (cap bytes), with
 * *len set to the payload size. When cap is too small (or payload NULL and
 * the payload non-empty) it returns RSHARE_E_NOSPACE with *len set and
 * consumes nothing: a retry receives the same message and fd. Likewise a
 * process with no free fd gets RSHARE_E_IO with rshare_last_errno() EMFILE
 * and the message stays queued. A message is read with two system calls (a
 * peek that takes the fd, then the read). Data that is not an rshare message
 * is refused and left queued; an rshare message with the wrong number of fds
 * (1, or since 1.2 2: the device and its ledger) is refused and dropped,
 * as is (since 1.2) one with extra fds, which rshare_channel_recvv() takes.
 * A fd that is not a device context is closed and refused; a second fd
 * that is not that context's ledger is closed and the context kept without
 * it. Blocks until a message comes, unless sock is non-blocking
 * (O_NONBLOCK): then, while no message (or only part of its 16-byte
 * header) is queued, it returns RSHARE_E_AGAIN (rshare_last_errno()
 * EAGAIN; since 1.2, before which it was RSHARE_E_IO with EAGAIN) and
 * consumes nothing: poll sock for readability and call again (an event
 * loop's reader callback). Once a message's header is queued, its sender
 * is in the middle of it: the call reads it whole, waiting up to 5 s for
 * each further piece of a stream message (64 KiB need not fit the socket
 * buffer), and fails with RSHARE_E_IO "message cut short" after that.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_NOSPACE; RSHARE_E_PROTOCOL
 * (not an rshare message, or no fd); RSHARE_E_NODEV (failure messages say
 * "the device fd received"); RSHARE_E_UNSUPPORTED (a context of a provider
 * that cannot import: all but mlx5); RSHARE_E_NOMEM; RSHARE_E_AGAIN;
 * RSHARE_E_IO (including a peer that closed the socket, and EMFILE).
 */
RSHARE_API int rshare_channel_recv(int sock, rshare_device **dev,
				   void *payload, size_t cap, size_t *len);

/**
 * rshare_channel_send() plus nfds more fds (at most RSHARE_CHANNEL_FDS_MAX;
 * fds may be NULL when nfds is 0), e.g. a shared buffer's memfd
 * (rshare_buf_fd()): the device fd and these travel in one SCM_RIGHTS
 * message, all or nothing. The fds are not closed. A 1.1 receiver
 * (rshare_channel_recv()) refuses a message with extra fds with
 * RSHARE_E_PROTOCOL and drops it; a message without is one it accepts.
 * Since 1.2.
 * Returns RSHARE_OK; RSHARE_E_INVAL (nfds past the limit, fds NULL with
 * nfds > 0, a negative fd, as rshare_channel_send()); RSHARE_E_STALE;
 * RSHARE_E_IO.
 */
RSHARE_API int rshare_channel_sendv(int sock, const rshare_device *dev, const int *fds,
				    size_t nfds, const void *payload, size_t len);

/**
 * Receive one message sent by rshare_channel_sendv() (or
 * rshare_channel_send(): no extra fds): as rshare_channel_recv(), and the
 * extra fds stored in fds (fds_cap entries), *nfds set to their number;
 * the caller owns them (close-on-exec). When fds_cap is too small (or fds
 * NULL with extra fds) it returns RSHARE_E_NOSPACE with *nfds set (and
 * *len, for a too-small payload buffer) and consumes nothing, as for the
 * payload. A message whose fds disagree with the count its header
 * announces is refused (RSHARE_E_PROTOCOL) and dropped, its fds closed.
 * Since 1.2.
 * Returns the statuses of rshare_channel_recv() (RSHARE_E_INVAL also for
 * nfds NULL).
 */
RSHARE_API int rshare_channel_recvv(int sock, rshare_device **dev, int *fds, size_t fds_cap,
				    size_t *nfds, void *payload, size_t cap, size_t *len);

/* ------------------------------------------------------------------ */
/* Broker: named shares between unrelated processes (since 1.1)         */
/* ------------------------------------------------------------------ */

/*
 * A broker holds named shares, each a device context fd plus a payload
 * (by convention the export blobs of the objects shared, concatenated), and
 * hands them to the processes that attach by name, subject to the share's
 * policy checked against the kernel's peer credentials (SO_PEERCRED). It runs
 * as `rshare serve` or embedded as a thread (rshare_broker_start()).
 * Wire protocol, endpoints and policy: docs/broker.md.
 *
 * Every rshare_broker_* function that takes an endpoint accepts NULL for the
 * default: $RSHARE_BROKER, else $XDG_RUNTIME_DIR/rshare/broker.sock, else
 * /run/rshare/broker.sock for root and /tmp/rshare-$UID/broker.sock for
 * others. A broker that cannot be reached gives RSHARE_E_IO with
 * rshare_last_errno() set (ENOENT or ECONNREFUSED: no broker there), as does
 * a broker that dies during a call, and one that does not answer in 10 s
 * or (since 1.2) accepts no connection in 10 s, its queue of connections
 * full (ETIMEDOUT).
 */

/** An embedded broker (a thread of this process). Opaque. Since 1.1. */
typedef struct rshare_broker rshare_broker;
/** A share this process published; the publisher's side. Opaque. Since 1.1. */
typedef struct rshare_share rshare_share;
/** Options of rshare_broker_publish(); see struct rshare_publish_opts. Since 1.1. */
typedef struct rshare_publish_opts rshare_publish_opts;

/** Share limits (since 1.1). */
enum rshare_share_limits {
	RSHARE_SHARE_NAME_MAX = 255, /**< longest share name, in bytes (NUL excluded) */
	RSHARE_SHARE_IDS_MAX = 64    /**< most uids, and most gids, a share may list */
};

/** rshare_publish_opts.flags (since 1.1). */
enum rshare_publish_flags {
	RSHARE_PUBLISH_PERSISTENT = 1 /**< the share outlives its publisher, until withdrawn */
};

/**
 * Options of a share (since 1.1). Set size to sizeof(struct
 * rshare_publish_opts) and zero what you do not use: later versions only
 * append fields, and read those only when size covers them. uids and gids
 * (n_uids, n_gids at most RSHARE_SHARE_IDS_MAX; the pointer may be NULL when
 * its count is 0) are the users and groups allowed to attach besides the
 * owner's uid and root.
 */
struct rshare_publish_opts {
	size_t size;          /**< sizeof(struct rshare_publish_opts): always first */
	uint32_t flags;       /**< RSHARE_PUBLISH_* */
	uint32_t n_uids;      /**< entries in uids */
	uint32_t n_gids;      /**< entries in gids */
	uint32_t reserved;    /**< 0 */
	const uint32_t *uids; /**< uids allowed to attach */
	const uint32_t *gids; /**< gids allowed to attach (primary or supplementary) */
};

/**
 * Start a broker as a thread of this process, listening on endpoint (a
 * filesystem path; NULL for the default, above). It creates the socket's
 * directory (mode 0700) when missing, replaces a stale socket left by a dead
 * broker, and never displaces a live one. With endpoint NULL and systemd
 * socket activation ($LISTEN_PID is this process, $LISTEN_FDS >= 1) it
 * serves the passed socket (fd 3) instead. Refused attaches are logged to
 * stderr. Stop it with rshare_broker_stop(), which withdraws every share.
 * Returns RSHARE_OK; RSHARE_E_INVAL (broker NULL, endpoint empty or longer
 * than a socket path); RSHARE_E_BUSY (a live broker serves endpoint);
 * RSHARE_E_PERM (the directory is not this user's, or not writable);
 * RSHARE_E_NOMEM; RSHARE_E_IO. Since 1.1.
 */
RSHARE_API int rshare_broker_start(const char *endpoint, rshare_broker **broker);

/**
 * Stop an embedded broker: its thread ends, every share it holds is
 * withdrawn (attachers keep the devices they hold), its socket file is
 * removed, and the handle becomes stale.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE. Since 1.1.
 */
RSHARE_API int rshare_broker_stop(rshare_broker *broker);

/**
 * The path the embedded broker listens on, with the (buf, cap, len)
 * convention (NUL-terminated).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOSPACE. Since 1.1.
 */
RSHARE_API int rshare_broker_endpoint(const rshare_broker *broker, char *buf, size_t cap,
				      size_t *len);

/**
 * The default endpoint (see above) for this process's environment and
 * user, with the (buf, cap, len) convention.
 * Returns RSHARE_OK; RSHARE_E_INVAL (len NULL, or the path would be too
 * long for a socket); RSHARE_E_NOSPACE. Since 1.1.
 */
RSHARE_API int rshare_broker_default_endpoint(char *buf, size_t cap, size_t *len);

/**
 * Publish dev and len bytes of payload (at most RSHARE_PAYLOAD_MAX; NULL
 * when len is 0) under name (1..RSHARE_SHARE_NAME_MAX bytes of
 * [A-Za-z0-9._-], with '/' separating non-empty parts) at the broker on
 * endpoint. opts may be NULL (defaults: not persistent, no extra uids or
 * gids). The broker keeps its own reference to the device context. The
 * share lives while *share does (this process's connection to the broker),
 * or with RSHARE_PUBLISH_PERSISTENT until withdrawn. *share is released by
 * rshare_broker_withdraw().
 * Returns RSHARE_OK; RSHARE_E_INVAL (bad name, options or payload);
 * RSHARE_E_STALE (dev); RSHARE_E_BUSY (the name is taken, or this uid
 * holds its limit of shares or of broker connections); RSHARE_E_NODEV
 * (the broker refused the device); RSHARE_E_NOMEM; RSHARE_E_PROTOCOL;
 * RSHARE_E_IO. Since 1.1.
 */
RSHARE_API int rshare_broker_publish(const char *endpoint, const char *name,
				     const rshare_device *dev, const void *payload, size_t len,
				     const rshare_publish_opts *opts, rshare_share **share);

/**
 * rshare_broker_publish() with nfds extra fds (at most
 * RSHARE_CHANNEL_FDS_MAX; fds may be NULL when nfds is 0): shared buffers'
 * memory (rshare_buf_fd()), which the broker keeps with the share and
 * hands, in order, to every rshare_broker_attachv(). The broker accepts
 * only sealed memfds (anything else: RSHARE_E_FD_MISMATCH or
 * RSHARE_E_INVAL, nothing published); the fds stay the caller's. A 1.1
 * broker refuses extra fds (RSHARE_E_PROTOCOL). Since 1.2.
 * Returns the statuses of rshare_broker_publish(), and RSHARE_E_INVAL for
 * nfds past the limit or a negative fd; RSHARE_E_FD_MISMATCH.
 */
RSHARE_API int rshare_broker_publishv(const char *endpoint, const char *name,
				      const rshare_device *dev, const int *fds, size_t nfds,
				      const void *payload, size_t len,
				      const rshare_publish_opts *opts, rshare_share **share);

/**
 * Withdraw the share this process published as share (if the broker still
 * holds it: a name withdrawn meanwhile by root, or gone with its broker,
 * is not an error) and release the handle, which becomes stale.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE; RSHARE_E_NOMEM (out
 * of memory for the request: nothing was withdrawn, the handle stays
 * live). Since 1.1.
 */
RSHARE_API int rshare_broker_withdraw(rshare_share *share);

/**
 * Withdraw the share called name from the broker on endpoint, whoever
 * published it (a persistent share, typically). Allowed to the share's
 * owner uid and root.
 * Returns RSHARE_OK; RSHARE_E_INVAL (name NULL or invalid);
 * RSHARE_E_NOT_FOUND; RSHARE_E_PERM; RSHARE_E_BUSY (this uid holds its
 * limit of broker connections); RSHARE_E_NOMEM;
 * RSHARE_E_PROTOCOL; RSHARE_E_IO. Since 1.1.
 */
RSHARE_API int rshare_broker_withdraw_name(const char *endpoint, const char *name);

/**
 * Attach to the share called name: a new device handle *dev importing its
 * context, and its payload copied to payload (cap bytes) with *len set.
 * When the name is not published, wait for it up to timeout_ms
 * milliseconds (0: do not wait; negative: wait without limit). A payload
 * larger than cap (or payload NULL) gives RSHARE_E_NOSPACE with *len set;
 * nothing is attached then. Signals do not end the wait (a handler that
 * runs is waited through); for a wait that a signal can end, use
 * rshare_broker_attach_start(), rshare_attach_wait() with
 * RSHARE_WAIT_SIGNAL and rshare_attach_finish() (since 1.2).
 * Returns RSHARE_OK; RSHARE_E_INVAL (a NULL argument or invalid name);
 * RSHARE_E_NOT_FOUND (no such share, within the timeout); RSHARE_E_PERM
 * (the share's policy refuses this process's uid and groups);
 * RSHARE_E_NOSPACE; RSHARE_E_NODEV; RSHARE_E_BUSY (this uid holds its
 * limit of broker connections); RSHARE_E_NOMEM;
 * RSHARE_E_PROTOCOL; RSHARE_E_IO. Since 1.1.
 */
RSHARE_API int rshare_broker_attach(const char *endpoint, const char *name, int timeout_ms,
				    rshare_device **dev, void *payload, size_t cap, size_t *len);

/**
 * rshare_broker_attach() for a share published with extra fds
 * (rshare_broker_publishv()): they are stored in fds (fds_cap entries),
 * *nfds set to their number; the caller owns them (close-on-exec). Too
 * small an fds_cap (or fds NULL) gives RSHARE_E_NOSPACE with *nfds set and
 * attaches nothing. rshare_broker_attach() of such a share answers
 * RSHARE_E_PROTOCOL, naming this call, as a 1.1 library does. An extra fd
 * that is not a sealed memfd (the only kind a broker keeps) is a broker
 * that lies: RSHARE_E_PROTOCOL, every fd of the reply closed. Since 1.2.
 * Returns the statuses of rshare_broker_attach() (RSHARE_E_INVAL also for
 * nfds NULL); a 1.1 broker refuses the request (RSHARE_E_PROTOCOL).
 */
RSHARE_API int rshare_broker_attachv(const char *endpoint, const char *name, int timeout_ms,
				     rshare_device **dev, int *fds, size_t fds_cap, size_t *nfds,
				     void *payload, size_t cap, size_t *len);

/**
 * The shares the broker on endpoint holds, as a JSON array sorted by name,
 * with the (buf, cap, len) convention: each entry has "name", "owner_uid",
 * "owner_pid", "persistent", "payload_size", "blobs" (the kinds of the
 * blobs the payload is made of, or null when it is not a sequence of
 * blobs), "attaches" and "created" (Unix time, seconds).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_NOSPACE; RSHARE_E_BUSY (this
 * uid holds its limit of broker connections); RSHARE_E_NOMEM;
 * RSHARE_E_PROTOCOL; RSHARE_E_IO. Since 1.1.
 */
RSHARE_API int rshare_broker_list(const char *endpoint, char *buf, size_t cap, size_t *len);

/* ------------------------------------------------------------------ */
/* Attach from an event loop: a pollable, cancellable attach (since 1.2) */
/* ------------------------------------------------------------------ */

/*
 * rshare_broker_attach() blocks its thread. An event loop (poll, epoll,
 * libuv, asyncio, luv) drives an attach operation instead:
 *
 *     rshare_attach *op;
 *     rshare_broker_attach_start(NULL, "team/exp1", &op);  // sends the request
 *     rshare_attach_fd(op, &fd);                            // poll fd for POLLIN
 *     ... when fd is readable:
 *     st = rshare_attach_finish(op, &dev, buf, sizeof buf, &len);
 *     // RSHARE_E_AGAIN: not yet, keep polling; anything else: op is over
 *     ... or, to give up: rshare_attach_cancel(op);
 *
 * Each operation has its own connection to the broker, on which the broker
 * keeps one waiting request for the name (no time limit: the caller's loop
 * keeps time). Cancelling closes that connection: the broker drops the
 * waiting request as it sees the connection end (before it serves any
 * request that reaches it later, rshare_broker_waiting() included), and the
 * process keeps no fd of it. A share that arrived but was not finished is
 * released with the operation (its device fd and extra fds closed).
 *
 * A share that carries extra fds (shared buffers' memory, published with
 * rshare_broker_publishv()) is attached by rshare_broker_attach_startv()
 * and rshare_attach_finishv(), as rshare_broker_attachv() attaches it.
 *
 * An operation is a handle like the others (generation-checked; a finished
 * or cancelled one gives RSHARE_E_STALE). Calls on one operation are
 * thread-safe; a loop normally drives each from one thread.
 */

/** A pending attach (rshare_broker_attach_start()). Opaque. Since 1.2. */
typedef struct rshare_attach rshare_attach;

/** rshare_attach_wait() flags (since 1.2). */
enum rshare_wait_flags {
	RSHARE_WAIT_SIGNAL = 1 /**< a signal handler that ran ends the wait (RSHARE_E_AGAIN, EINTR) */
};

/**
 * Start attaching to the share called name at the broker on endpoint (NULL:
 * the default): connect, send the request and return at once; the
 * operation *op waits for the name without a time limit until
 * rshare_attach_finish() completes it or rshare_attach_cancel() ends it.
 * Returns RSHARE_OK; RSHARE_E_INVAL (op NULL, name NULL or invalid, a bad
 * endpoint); RSHARE_E_NOMEM; RSHARE_E_IO (no broker: rshare_last_errno()
 * ENOENT or ECONNREFUSED; a broker whose queue of connections is full, one
 * that accepts none: ETIMEDOUT at once, the connect being one attempt that
 * does not wait, so the loop's thread never waits on it). Since 1.2.
 */
RSHARE_API int rshare_broker_attach_start(const char *endpoint, const char *name,
					  rshare_attach **op);

/**
 * rshare_broker_attach_start() for a share that may carry extra fds (one
 * published with rshare_broker_publishv(): shared buffers' memory): the
 * request says they are welcome, as rshare_broker_attachv()'s does, and
 * rshare_attach_finishv() hands them over. A share without extra fds
 * arrives as with rshare_broker_attach_start(). (An operation started
 * without v is refused such a share by the broker: its finish answers
 * RSHARE_E_PROTOCOL, naming this call, and the op is over.)
 * Returns the statuses of rshare_broker_attach_start(); a 1.1 broker
 * refuses the request (the finish answers RSHARE_E_PROTOCOL). Since 1.2.
 */
RSHARE_API int rshare_broker_attach_startv(const char *endpoint, const char *name,
					   rshare_attach **op);

/**
 * The fd to poll for readability (POLLIN, EPOLLIN, a loop's reader) while
 * op is pending: readable when the broker answered (or closed the
 * connection). Borrowed: owned by op, valid until op is finished or
 * cancelled; never read from, close or keep it.
 * Returns RSHARE_OK; RSHARE_E_INVAL (fd NULL); RSHARE_E_STALE. Since 1.2.
 */
RSHARE_API int rshare_attach_fd(const rshare_attach *op, int *fd);

/**
 * Block until op's fd is readable (then call rshare_attach_finish()), for
 * up to timeout_ms milliseconds (negative: no limit). With flags
 * RSHARE_WAIT_SIGNAL a signal whose handler ran (installed without
 * SA_RESTART or with it: either way) ends the wait with RSHARE_E_AGAIN and
 * rshare_last_errno() EINTR, so a program can stop waiting on Ctrl-C
 * (rshare_broker_attach() itself waits through signals); with flags 0
 * signals are waited through. op stays pending either way.
 * Returns RSHARE_OK (readable); RSHARE_E_AGAIN (the timeout passed:
 * ETIMEDOUT; a signal: EINTR); RSHARE_E_INVAL (unknown flags);
 * RSHARE_E_STALE; RSHARE_E_IO. Since 1.2.
 */
RSHARE_API int rshare_attach_wait(rshare_attach *op, int timeout_ms, uint32_t flags);

/**
 * Complete op if the broker has answered: as rshare_broker_attach(), a
 * new device handle *dev and the payload copied to payload (cap bytes),
 * *len set. Never blocks. While the share has not arrived it returns
 * RSHARE_E_AGAIN and op stays pending. A payload larger than cap (or
 * payload NULL with a non-empty payload) gives RSHARE_E_NOSPACE with *len
 * set and op keeps the share: call again with a larger buffer. With
 * RSHARE_E_AGAIN, RSHARE_E_NOSPACE, RSHARE_E_INVAL and RSHARE_E_STALE op is
 * untouched, and so with RSHARE_E_PROTOCOL for a share that arrived with
 * extra fds (an op from rshare_broker_attach_startv(): the message names
 * rshare_attach_finishv(), which takes them); with any other status
 * (success included) op is over: its connection is closed and the handle
 * is stale.
 * Returns RSHARE_OK; RSHARE_E_AGAIN; RSHARE_E_INVAL (dev or len NULL);
 * RSHARE_E_STALE; RSHARE_E_NOSPACE; RSHARE_E_PERM (the share's policy
 * refuses this process); RSHARE_E_NODEV; RSHARE_E_BUSY (this uid holds its
 * limit of broker connections); RSHARE_E_NOMEM;
 * RSHARE_E_PROTOCOL; RSHARE_E_IO (the broker stopped or died). Since 1.2.
 */
RSHARE_API int rshare_attach_finish(rshare_attach *op, rshare_device **dev, void *payload,
				    size_t cap, size_t *len);

/**
 * rshare_attach_finish() that also takes the share's extra fds (an op
 * from rshare_broker_attach_startv()): they are stored in fds (fds_cap
 * entries), *nfds set to their number (0 for a share without any); the
 * caller owns them (close-on-exec), as with rshare_broker_attachv(). Too
 * small an fds_cap (or fds NULL) or payload gives RSHARE_E_NOSPACE with
 * both *nfds and *len set, and op keeps the share (fds included) for a
 * call with more room. rshare_attach_finish() of an op whose share arrived
 * with extra fds answers RSHARE_E_PROTOCOL naming this call, and there op
 * keeps the share as well: call this one, or rshare_attach_cancel(), which
 * closes the fds with the rest. Since 1.2.
 * Returns the statuses of rshare_attach_finish(), RSHARE_E_INVAL also for
 * nfds NULL.
 */
RSHARE_API int rshare_attach_finishv(rshare_attach *op, rshare_device **dev, int *fds,
				     size_t fds_cap, size_t *nfds, void *payload, size_t cap,
				     size_t *len);

/**
 * End a pending op without attaching: its connection is closed (the broker
 * drops the waiting request), a share that arrived unfinished is released,
 * and the handle becomes stale. Never blocks: an rshare_attach_wait() on
 * op in another thread returns at once (RSHARE_OK; the finish after it
 * gives RSHARE_E_STALE).
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_STALE (already finished or
 * cancelled). Since 1.2.
 */
RSHARE_API int rshare_attach_cancel(rshare_attach *op);

/**
 * The attach requests waiting at the broker on endpoint for a name not yet
 * published, as a JSON array sorted by name, with the (buf, cap, len)
 * convention: each entry has "name", "uid", "pid" (the waiting process's)
 * and "waited_ms". A request whose process cancelled it or exited is not
 * listed. Shown to any client, as rshare_broker_list() is.
 * Returns RSHARE_OK; RSHARE_E_INVAL; RSHARE_E_NOSPACE; RSHARE_E_BUSY (this
 * uid holds its limit of broker connections); RSHARE_E_NOMEM;
 * RSHARE_E_PROTOCOL (also: a broker older than 1.2); RSHARE_E_IO. Since 1.2.
 */
RSHARE_API int rshare_broker_waiting(const char *endpoint, char *buf, size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif

#endif /* RSHARE_RSHARE_H */
