/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare.i: the one SWIG interface over rshare.h, shared by every language.
 *
 * This file says WHAT each argument pattern of the C API means; the
 * per-language files say HOW that meaning looks in their language:
 *   swig/python/rshare_python.i   (included under SWIGPYTHON)
 *   swig/lua/rshare_lua.i         (included under SWIGLUA)
 * The header is the single source of truth: it is %included below, never
 * redeclared here.
 *
 * For the Lua side (or any other language): define typemaps for the
 * abstract patterns below in your own file; a pattern you leave undefined
 * falls back to SWIG's default wrapping, so you can plug in one at a time.
 *
 *   int RSHARE_STATUS                        "out": every int return except
 *                                            rshare_last_errno() is a status;
 *                                            a negative one must raise, with
 *                                            rshare_last_error() as message.
 *   SWIGTYPE *RSHARE_HANDLE                  "in": an opaque handle argument
 *                                            (a generation-checked token the C
 *                                            side never dereferences).
 *   SWIGTYPE **RSHARE_NEW_HANDLE             "in" numinputs=0 + "argout": a new
 *                                            handle returned to the caller, who
 *                                            owns it and must release it with
 *                                            close/unimport/free (never let
 *                                            SWIG free it).
 *   (const void *RSHARE_BYTES, size_t RSHARE_LEN)        a byte string in.
 *   (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
 *                                            a byte string out, at most
 *                                            RSHARE_BLOB_MAX bytes.
 *   (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
 *                                            a byte string out, at most
 *                                            RSHARE_PAYLOAD_MAX bytes.
 *   (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
 *                                            a string out (name, text form,
 *                                            JSON: short, bounded).
 *   (char *RSHARE_STR_OUT, size_t RSHARE_CAP)  a NUL-terminated string out of
 *                                            at most RSHARE_NAME_MAX bytes.
 *   void **RSHARE_ADDR_OUT                   an address out (borrowed: valid
 *                                            until rshare_var_unmap()).
 *   void **RSHARE_NATIVE_OUT                 a native rdma-core object's
 *                                            address out, as an integer
 *                                            (borrowed; since 1.1).
 *   (void *RSHARE_MEM, size_t RSHARE_MEMLEN) writable memory the caller keeps
 *                                            alive (an MR's; since 1.1).
 *                                            Lua has no multi-input typemaps:
 *                                            there void *RSHARE_MEM_ADDR is the
 *                                            address, the length a plain size_t.
 *   (const int *RSHARE_FDS, size_t RSHARE_NFDS)   fds in: a sequence (Python
 *                                            list, Lua table) of ints (since 1.2).
 *   (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS)
 *                                            fds out, at most
 *                                            RSHARE_CHANNEL_FDS_MAX: a list
 *                                            (table) of ints the caller owns.
 *   (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN)
 *                                            "in" a count n, "argout" the n
 *                                            bytes read (since 1.1).
 *   <scalar> *OUTPUT                         typemaps.i: a scalar out.
 * Out values are returned in argument order after the (void) status.
 * The blocking calls are rshare_channel_send/recv(v): release the
 * interpreter lock around them if your language has one.
 *
 * Build: the module name is "rshare" (see below); a language that
 * needs another low-level name passes -module/-interface on the command line.
 */
%module rshare

%{
#include "rshare/rshare.h"
%}

%include <stdint.i>
%include <typemaps.i>

/* Public names lose the rshare_ prefix (rshare.pd_alloc); constants keep
 * their RSHARE_ prefix (rshare.RSHARE_E_STALE). */
%rename("%(strip:[rshare_])s") "";

#ifdef SWIGPYTHON
%include "python/rshare_python.i"
#endif
#ifdef SWIGLUA
%include "lua/rshare_lua.i"
#endif

/* ---- which argument pattern means what (language-neutral) ---------------- */

/* Statuses: copy the plain integer rule for the one int that is no status
 * before every other int return becomes a status. */
%typemap(out) int rshare_last_errno = int;
%typemap(out) int rshare_version_number = int;
%apply int RSHARE_STATUS { int };

/* Handles in. */
%apply SWIGTYPE *RSHARE_HANDLE {
	rshare_device *dev, const rshare_device *dev,
	rshare_pd *pd, const rshare_pd *pd,
	rshare_var *var, const rshare_var *var,
	rshare_mr *mr, const rshare_mr *mr,
	rshare_dm *dm, const rshare_dm *dm,
	rshare_buf *buf, const rshare_buf *buf
};

/* New handles out: the caller owns them (close/unimport/free). */
%apply SWIGTYPE **RSHARE_NEW_HANDLE {
	rshare_device **out, rshare_device **dev,
	rshare_pd **out, rshare_var **out, rshare_mr **out, rshare_dm **out,
	rshare_buf **out,
	rshare_mr **mr /* rshare_buf_mr: borrowed, the buffer releases it */
};

/* Bytes in: blobs and channel payloads. */
%apply (const void *RSHARE_BYTES, size_t RSHARE_LEN) {
	(const void *blob, size_t len), (const void *payload, size_t len),
	(const void *src, size_t len), (const void *buf, size_t avail)
};
#ifdef SWIGLUA
%apply void *RSHARE_MEM_ADDR { void *addr };
#else
%apply (void *RSHARE_MEM, size_t RSHARE_MEMLEN) { (void *addr, size_t length) };
#endif
%apply (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) { (void *dst, size_t len) };

/* Sized outputs, following the header's (buf, cap, len) convention. */
%apply (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	(void *buf, size_t cap, size_t *len), (void *buf, size_t cap, size_t *out_len),
	(void *blob, size_t cap, size_t *len)
};
%apply (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	(void *payload, size_t cap, size_t *len)
};
%apply (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	(char *buf, size_t cap, size_t *len), (char *buf, size_t cap, size_t *out_len)
};
%apply (char *RSHARE_STR_OUT, size_t RSHARE_CAP) { (char *name, size_t cap) };
%apply void **RSHARE_ADDR_OUT { void **addr, void **ptr };
/* Extra fds in and out of a channel message (since 1.2). */
%apply (const int *RSHARE_FDS, size_t RSHARE_NFDS) { (const int *fds, size_t nfds) };
%apply (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS) {
	(int *fds, size_t fds_cap, size_t *nfds)
};
%apply void **RSHARE_NATIVE_OUT {
	void **ibv_context, void **ibv_pd, void **mlx5dv_var, void **ibv_mr, void **ibv_dm
};

/* Scalar outputs. */
%apply int *OUTPUT { int *fd, int *provider, int *kind };
%apply size_t *OUTPUT { size_t *count };
%apply size_t *OUTPUT { size_t *len }; /* rshare_blob_size, rshare_buf_ptr; every other is a (buf, cap, len) */
%apply uint32_t *OUTPUT {
	uint32_t *handle, uint32_t *page_id, uint32_t *length, uint32_t *caps,
	uint32_t *lkey, uint32_t *rkey, uint32_t *access
};
%apply uint64_t *OUTPUT {
	uint64_t *guid, uint64_t *mmap_off, uint64_t *addr, uint64_t *length, uint64_t *value
};

/* The broker (since 1.1): the bindings wrap it on their own terms
 * (bindings/python/rshare/_broker.py, bindings/lua); not yet through SWIG. */
%ignore rshare_broker_start;
%ignore rshare_broker_stop;
%ignore rshare_broker_endpoint;
%ignore rshare_broker_default_endpoint;
%ignore rshare_broker_publish;
%ignore rshare_broker_withdraw;
%ignore rshare_broker_withdraw_name;
%ignore rshare_broker_attach;
%ignore rshare_broker_list;
/* Since 1.2, wrapped the same way (bindings/python/ext/broker.c, swig/lua/broker_lua.i). */
%ignore rshare_broker_waiting;
%ignore rshare_broker_attach_start;
%ignore rshare_broker_attach_startv;
%ignore rshare_attach_fd;
%ignore rshare_attach_wait;
%ignore rshare_attach_finish;
%ignore rshare_attach_finishv;
%ignore rshare_attach_cancel;
%ignore rshare_broker_publishv;
%ignore rshare_broker_attachv;
%ignore rshare_publish_opts;
%ignore RSHARE_SHARE_NAME_MAX;
%ignore RSHARE_SHARE_IDS_MAX;
%ignore RSHARE_PUBLISH_PERSISTENT;

%include "rshare/rshare.h"
