/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The full sharing scenario on the simulated device, every call through
 * ffi_call: open, PD and VAR alloc, export, text form and back, describe,
 * a second process that receives the device over the channel, imports both
 * objects, writes the VAR page and frees the PD, then the owner's view of
 * all that (NOT_FOUND on free, the child's write in its own mapping).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ffi_bind.h"
#include "harness.h"

#define VAR_MAGIC 0x5253484152453031ull /* what the child writes in the VAR page */

/* What the owner exported; the child inherits a copy to compare with. */
struct exported {
	unsigned char pd_blob[256], var_blob[256];
	size_t pd_len, var_len;
	char pd_text[256], var_text[256];
	uint32_t pd_handle, page_id, length;
	uint64_t mmap_off;
};

/* fn names every member of enum_name in the manifest as the member's
 * lower-case suffix ("pd" for RSHARE_KIND_PD), and 0, a negative value and
 * the value after the largest as NULL: a kind or provider added to the
 * header but not to the library's tables fails here. */
static void check_enum_names(const char *enum_name, const char *prefix, const char *fn)
{
	long long max = 0;
	const char *s;

	for (size_t i = 0; i < abi_const_count(); i++) {
		const struct abi_const *c = abi_const_at(i);
		char want[32];
		size_t n = 0;

		if (strcmp(c->enum_name, enum_name) != 0)
			continue;
		for (const char *p = c->name + strlen(prefix); *p && n + 1 < sizeof(want); p++)
			want[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
		want[n] = 0;
		s = CALLP(fn, VI((int)c->value));
		EXPECT_TRUE(s && strcmp(s, want) == 0, "%s(%s) = %s, want %s", fn, c->name,
			    s ? s : "(null)", want);
		max = c->value > max ? c->value : max;
	}
	EXPECT_TRUE(max > 0, "the manifest has no enum %s", enum_name);
	for (int v = -1; v <= 1; v++) {
		long long bad = v == 1 ? max + 1 : v;

		s = CALLP(fn, VI((int)bad));
		EXPECT_TRUE(s == NULL, "%s(%lld) = %s, want NULL", fn, bad, s);
	}
}

static void check_library(void)
{
	const char *s = CALLP0("rshare_version");

	EXPECT_TRUE(s && strcmp(s, abi_version()) == 0, "rshare_version() = %s, manifest %s",
		    s ? s : "(null)", abi_version());
	/* Names of all statuses of the manifest, from the library's own table. */
	for (size_t i = 0; i < abi_const_count(); i++) {
		const struct abi_const *c = abi_const_at(i);

		if (strcmp(c->enum_name, "rshare_status") != 0)
			continue;
		s = CALLP("rshare_status_name", VI((int)c->value));
		EXPECT_TRUE(s && strcmp(s, c->name) == 0, "rshare_status_name(%lld) = %s",
			    c->value, s ? s : "(null)");
		s = CALLP("rshare_strerror", VI((int)c->value));
		EXPECT_TRUE(s && *s, "rshare_strerror(%s) is empty", c->name);
	}
	check_enum_names("rshare_kind", "RSHARE_KIND_", "rshare_kind_name");
	check_enum_names("rshare_provider", "RSHARE_PROVIDER_", "rshare_provider_name");
	s = CALLP("rshare_status_name", VI(12345));
	EXPECT_TRUE(s && strcmp(s, "RSHARE_E_UNKNOWN") == 0, "status_name(12345) = %s",
		    s ? s : "(null)");
	s = CALLP("rshare_strerror", VI(-12345));
	EXPECT_TRUE(s && *s, "strerror(-12345) is empty");

	/* A failure that involved no OS call: message names the function, no errno. */
	EXPECT(CALLI("rshare_device_open", VP("sim0"), VP(NULL)), ST(E_INVAL), "open(out NULL)");
	s = CALLP0("rshare_last_error");
	EXPECT_TRUE(s && strstr(s, "rshare_device_open"), "last_error after open: %s",
		    s ? s : "(null)");
	EXPECT(CALLI0("rshare_last_errno"), 0, "last_errno after an argument error");
}

/* sim0 is listed, with the simulated provider. */
static void check_devices(uint64_t *sim_guid)
{
	size_t n = 0, sim = (size_t)-1;
	char name[64];
	uint64_t guid;
	int provider;

	EXPECT(CALLI("rshare_devices_count", VP(&n)), ST(OK), "devices_count");
	for (size_t i = 0; i < n; i++) {
		EXPECT(CALLI("rshare_devices_get", VZ(i), VP(name), VZ(sizeof(name)), VP(&guid),
			     VP(&provider)), ST(OK), "devices_get(%zu)", i);
		if (strcmp(name, "sim0") == 0) {
			sim = i;
			*sim_guid = guid;
			EXPECT(provider, ST(PROVIDER_SIM), "provider of sim0 in the list");
		}
	}
	EXPECT_TRUE(sim != (size_t)-1, "sim0 is not among the %zu devices", n);
	EXPECT(CALLI("rshare_devices_get", VZ(n), VP(name), VZ(sizeof(name)), VP(NULL), VP(NULL)),
	       ST(E_NOT_FOUND), "devices_get(past the end)");
}

static void *open_sim0(uint64_t sim_guid)
{
	void *dev = NULL;
	char name[64];
	size_t len = 0;
	uint64_t guid = 0;
	int fd = -1, provider = 0;

	EXPECT(CALLI("rshare_device_open", VP("sim0"), VP(&dev)), ST(OK), "open sim0");
	EXPECT(CALLI("rshare_device_fd", VP(dev), VP(&fd)), ST(OK), "device_fd");
	EXPECT_TRUE(fd >= 0, "device fd %d", fd);
	EXPECT(CALLI("rshare_device_name", VP(dev), VP(name), VZ(sizeof(name)), VP(&len)), ST(OK),
	       "device_name");
	EXPECT_TRUE(len == 4 && strcmp(name, "sim0") == 0, "device name %s (%zu)", name, len);
	EXPECT(CALLI("rshare_device_guid", VP(dev), VP(&guid)), ST(OK), "device_guid");
	EXPECT_TRUE(guid == sim_guid, "guid %#llx, listed %#llx", (unsigned long long)guid,
		    (unsigned long long)sim_guid);
	EXPECT(CALLI("rshare_device_provider", VP(dev), VP(&provider)), ST(OK), "provider");
	EXPECT(provider, ST(PROVIDER_SIM), "provider of the open sim0");
	return dev;
}

/* Kind, description, text form and back, for one exported blob. */
static void check_blob(const unsigned char *blob, size_t len, int kind, const char *kind_name,
		       char *text)
{
	char desc[512], want[32];
	unsigned char back[256];
	size_t dlen = 0, tlen = 0, blen = 0;
	int got = 0;

	EXPECT_TRUE(len > 0 && len <= (size_t)ST(BLOB_MAX), "%s blob of %zu bytes", kind_name,
		    len);
	EXPECT(CALLI("rshare_blob_kind", VP(blob), VZ(len), VP(&got)), ST(OK), "blob_kind");
	EXPECT(got, kind, "kind of the %s blob", kind_name);
	EXPECT(CALLI("rshare_blob_describe", VP(blob), VZ(len), VP(desc), VZ(sizeof(desc)),
		     VP(&dlen)), ST(OK), "blob_describe");
	snprintf(want, sizeof(want), "\"%s\"", kind_name);
	EXPECT_TRUE(dlen == strlen(desc) && desc[0] == '{' && strstr(desc, want) &&
		    strstr(desc, "\"sim\""), "describe: %s", desc);
	EXPECT(CALLI("rshare_blob_to_text", VP(blob), VZ(len), VP(text), VZ(256), VP(&tlen)),
	       ST(OK), "blob_to_text");
	EXPECT_TRUE(tlen == strlen(text) && tlen < (size_t)ST(TEXT_MAX) &&
		    strncmp(text, "rshare:", 7) == 0, "text form %s", text);
	EXPECT(CALLI("rshare_blob_from_text", VP(text), VP(back), VZ(sizeof(back)), VP(&blen)),
	       ST(OK), "blob_from_text");
	EXPECT_TRUE(blen == len && memcmp(back, blob, len) == 0, "text round trip of the %s blob",
		    kind_name);
}

/* Statuses that need live objects: BUSY, DEVICE_MISMATCH, BLOB_KIND, CORRUPT. */
static void check_refusals(void *dev, const struct exported *x)
{
	unsigned char bad[256];
	void *other = NULL, *obj = NULL;
	size_t len = 0;
	int kind, fds[2];

	EXPECT(CALLI("rshare_device_close", VP(dev)), ST(E_BUSY), "close with live PD and VAR");
	EXPECT(CALLI("rshare_device_open", VP("sim0"), VP(&other)), ST(OK), "open a 2nd table");
	EXPECT(CALLI("rshare_pd_import", VP(other), VP(x->pd_blob), VZ(x->pd_len), VP(&obj)),
	       ST(E_DEVICE_MISMATCH), "PD blob into another table");
	EXPECT(CALLI("rshare_var_import", VP(other), VP(x->var_blob), VZ(x->var_len), VP(&obj)),
	       ST(E_DEVICE_MISMATCH), "VAR blob into another table");
	EXPECT(CALLI("rshare_device_close", VP(other)), ST(OK), "close the 2nd table");
	EXPECT(CALLI("rshare_pd_import", VP(dev), VP(x->var_blob), VZ(x->var_len), VP(&obj)),
	       ST(E_BLOB_KIND), "VAR blob to pd_import");
	EXPECT(CALLI("rshare_var_import", VP(dev), VP(x->pd_blob), VZ(x->pd_len), VP(&obj)),
	       ST(E_BLOB_KIND), "PD blob to var_import");

	memcpy(bad, x->pd_blob, x->pd_len);
	bad[x->pd_len / 2] ^= 0x40;
	EXPECT(CALLI("rshare_blob_kind", VP(bad), VZ(x->pd_len), VP(&kind)), ST(E_BLOB_CORRUPT),
	       "blob_kind(flipped bit)");
	EXPECT(CALLI("rshare_pd_import", VP(dev), VP(bad), VZ(x->pd_len), VP(&obj)),
	       ST(E_BLOB_CORRUPT), "pd_import(flipped bit)");
	EXPECT(CALLI("rshare_blob_kind", VP(x->pd_blob), VZ(x->pd_len - 1), VP(&kind)),
	       ST(E_BLOB_CORRUPT), "blob_kind(truncated)");
	EXPECT(CALLI("rshare_blob_from_text", VP("rshare:***"), VP(bad), VZ(sizeof(bad)),
		     VP(&len)), ST(E_INVAL), "blob_from_text(bad base64url)");
	EXPECT(CALLI("rshare_var_alloc", VP(dev), VU32(0x80), VP(&obj)), ST(E_INVAL),
	       "var_alloc(unknown flag)");

	EXPECT(CALLI("rshare_device_import", VI(-1), VP(&obj)), ST(E_INVAL), "import fd -1");
	if (pipe(fds) == 0) {
		EXPECT(CALLI("rshare_device_import", VI(fds[0]), VP(&obj)), ST(E_NODEV),
		       "import a pipe");
		close(fds[0]);
		close(fds[1]);
	}
	/* Garbage on the channel is refused and stays queued; EOF is E_IO. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
		memset(bad, 'x', 32);
		EXPECT_TRUE(write(fds[0], bad, 32) == 32, "write garbage");
		EXPECT(CALLI("rshare_channel_recv", VI(fds[1]), VP(&obj), VP(bad), VZ(sizeof(bad)),
			     VP(&len)), ST(E_PROTOCOL), "channel_recv(not an rshare message)");
		close(fds[0]);
		EXPECT_TRUE(recv(fds[1], bad, sizeof(bad), 0) == 32, "garbage left queued");
		EXPECT(CALLI("rshare_channel_recv", VI(fds[1]), VP(&obj), VP(bad), VZ(sizeof(bad)),
			     VP(&len)), ST(E_IO), "channel_recv(peer closed)");
		close(fds[1]);
	}
}

/* Same table, same process: a second device handle from the fd and a local
 * import; releasing them leaves the originals alive. */
static void check_local_import(void *dev, const struct exported *x)
{
	void *dev2 = NULL, *pd2 = NULL;
	uint32_t handle = 0;
	int fd = -1;

	EXPECT(CALLI("rshare_device_fd", VP(dev), VP(&fd)), ST(OK), "device_fd");
	EXPECT(CALLI("rshare_device_import", VI(fd), VP(&dev2)), ST(OK), "device_import(own fd)");
	EXPECT(CALLI("rshare_pd_import", VP(dev2), VP(x->pd_blob), VZ(x->pd_len), VP(&pd2)), ST(OK),
	       "pd_import via the imported device");
	EXPECT(CALLI("rshare_pd_handle", VP(pd2), VP(&handle)), ST(OK), "pd_handle(import)");
	EXPECT_TRUE(handle == x->pd_handle, "imported handle %u, exported %u", handle,
		    x->pd_handle);
	EXPECT(CALLI("rshare_device_close", VP(dev2)), ST(E_BUSY), "close dev2 with its PD");
	EXPECT(CALLI("rshare_pd_unimport", VP(pd2)), ST(OK), "pd_unimport");
	EXPECT(CALLI("rshare_pd_handle", VP(pd2), VP(&handle)), ST(E_STALE), "unimported handle");
	EXPECT(CALLI("rshare_device_close", VP(dev2)), ST(OK), "close dev2");
}

/* The other process: everything it learns comes over the channel. */
static void child_side(int sock, const struct exported *x)
{
	char msg[600], *var_text;
	unsigned char blob[256];
	size_t len = 0, blen = 0;
	void *dev = NULL, *pd = NULL, *var = NULL, *addr = NULL;
	uint32_t handle = 0, page_id = 0, length = 0;
	uint64_t off = 0;
	size_t want = strlen(x->pd_text) + 1 + strlen(x->var_text) + 1;

	EXPECT(CALLI("rshare_channel_recv", VI(sock), VP(&dev), VP(msg), VZ(8), VP(&len)),
	       ST(E_NOSPACE), "channel_recv(8-byte buffer)");
	EXPECT_TRUE(len == want, "needed size %zu, want %zu", len, want);
	EXPECT(CALLI("rshare_channel_recv", VI(sock), VP(&dev), VP(msg), VZ(sizeof(msg)),
		     VP(&len)), ST(OK), "channel_recv after NOSPACE (same message)");
	var_text = strchr(msg, ' ');
	if (!EXPECT_TRUE(len == want && var_text, "payload of %zu bytes", len))
		return;
	*var_text++ = '\0';

	EXPECT(CALLI("rshare_blob_from_text", VP(msg), VP(blob), VZ(sizeof(blob)), VP(&blen)),
	       ST(OK), "child: PD text to blob");
	EXPECT(CALLI("rshare_pd_import", VP(dev), VP(blob), VZ(blen), VP(&pd)), ST(OK),
	       "child: pd_import");
	EXPECT(CALLI("rshare_pd_handle", VP(pd), VP(&handle)), ST(OK), "child: pd_handle");
	EXPECT_TRUE(handle == x->pd_handle, "child sees PD handle %u, owner %u", handle,
		    x->pd_handle);

	EXPECT(CALLI("rshare_blob_from_text", VP(var_text), VP(blob), VZ(sizeof(blob)),
		     VP(&blen)), ST(OK), "child: VAR text to blob");
	EXPECT(CALLI("rshare_var_import", VP(dev), VP(blob), VZ(blen), VP(&var)), ST(OK),
	       "child: var_import");
	EXPECT(CALLI("rshare_var_attrs", VP(var), VP(&page_id), VP(&length), VP(&off)), ST(OK),
	       "child: var_attrs");
	EXPECT_TRUE(page_id == x->page_id && length == x->length && off == x->mmap_off,
		    "child: VAR attrs differ from the owner's");
	EXPECT(CALLI("rshare_var_map", VP(var), VP(&addr)), ST(OK), "child: var_map");
	if (addr)
		*(volatile uint64_t *)addr = VAR_MAGIC;

	EXPECT(CALLI("rshare_pd_free", VP(pd)), ST(OK), "child: pd_free (for everyone)");
	EXPECT(CALLI("rshare_var_unimport", VP(var)), ST(OK), "child: var_unimport");
	EXPECT(CALLI("rshare_device_close", VP(dev)), ST(OK), "child: device_close");
}

void run_scenario(void)
{
	struct exported x = { .pd_len = 0 };
	void *dev, *pd = NULL, *var = NULL, *addr = NULL, *addr2 = NULL;
	uint64_t sim_guid = 0;
	char payload[600];
	int sv[2], status = 0;
	pid_t pid;

	check_library();
	check_devices(&sim_guid);
	dev = open_sim0(sim_guid);

	EXPECT(CALLI("rshare_pd_alloc", VP(dev), VP(&pd)), ST(OK), "pd_alloc");
	EXPECT(CALLI("rshare_pd_handle", VP(pd), VP(&x.pd_handle)), ST(OK), "pd_handle");
	EXPECT(CALLI("rshare_pd_export", VP(pd), VP(x.pd_blob), VZ(sizeof(x.pd_blob)),
		     VP(&x.pd_len)), ST(OK), "pd_export");
	check_blob(x.pd_blob, x.pd_len, ST(KIND_PD), "pd", x.pd_text);

	EXPECT(CALLI("rshare_var_alloc", VP(dev), VU32(0), VP(&var)), ST(OK), "var_alloc");
	EXPECT(CALLI("rshare_var_attrs", VP(var), VP(&x.page_id), VP(&x.length), VP(&x.mmap_off)),
	       ST(OK), "var_attrs");
	EXPECT_TRUE(x.length == 4096, "VAR page length %u", x.length);
	EXPECT(CALLI("rshare_var_export", VP(var), VP(x.var_blob), VZ(sizeof(x.var_blob)),
		     VP(&x.var_len)), ST(OK), "var_export");
	check_blob(x.var_blob, x.var_len, ST(KIND_VAR), "var", x.var_text);
	EXPECT(CALLI("rshare_var_map", VP(var), VP(&addr)), ST(OK), "var_map");
	EXPECT(CALLI("rshare_var_map", VP(var), VP(&addr2)), ST(OK), "var_map again");
	EXPECT_TRUE(addr && addr == addr2, "repeated var_map gives %p then %p", addr, addr2);
	if (addr)
		*(volatile uint64_t *)addr = 0;

	check_refusals(dev, &x);
	check_local_import(dev, &x);

	/* Hand the device and both blobs (as text) to a child process. */
	snprintf(payload, sizeof(payload), "%s %s", x.pd_text, x.var_text);
	if (!EXPECT_TRUE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair"))
		return;
	EXPECT(CALLI("rshare_channel_send", VI(sv[0]), VP(dev), VP(payload),
		     VZ(strlen(payload) + 1)), ST(OK), "channel_send");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		child_side(sv[1], &x);
		fflush(stdout);
		_exit(ffi_failures ? 1 : 0);
	}
	close(sv[1]);
	close(sv[0]);
	EXPECT_TRUE(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0, "child process failed (status %#x)", status);

	/* The child's write and free, seen from here. */
	EXPECT_TRUE(addr && *(volatile uint64_t *)addr == VAR_MAGIC,
		    "the child's write is not in the owner's VAR mapping");
	EXPECT(CALLI("rshare_pd_free", VP(pd)), ST(E_NOT_FOUND), "pd_free after the child freed");
	EXPECT(CALLI("rshare_pd_handle", VP(pd), VP(&x.pd_handle)), ST(OK),
	       "handle still live after NOT_FOUND");
	EXPECT(CALLI("rshare_pd_unimport", VP(pd)), ST(OK), "pd_unimport of a destroyed PD");
	EXPECT(CALLI("rshare_pd_unimport", VP(pd)), ST(E_STALE), "pd_unimport twice");
	EXPECT(CALLI("rshare_pd_import", VP(dev), VP(x.pd_blob), VZ(x.pd_len), VP(&pd)),
	       ST(E_NOT_FOUND), "pd_import after free");

	EXPECT(CALLI("rshare_var_unmap", VP(var)), ST(OK), "var_unmap");
	EXPECT(CALLI("rshare_var_unmap", VP(var)), ST(OK), "var_unmap when not mapped");
	EXPECT(CALLI("rshare_var_free", VP(var)), ST(OK), "var_free");
	EXPECT(CALLI("rshare_var_free", VP(var)), ST(E_STALE), "var_free twice");
	EXPECT(CALLI("rshare_var_import", VP(dev), VP(x.var_blob), VZ(x.var_len), VP(&var)),
	       ST(E_NOT_FOUND), "var_import after free");

	EXPECT(CALLI("rshare_device_close", VP(dev)), ST(OK), "device_close");
	EXPECT(CALLI("rshare_device_close", VP(dev)), ST(E_STALE), "device_close twice");
}
