/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Loads rdma-core once and resolves its symbols by version node. */
#include "hw/hw_dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct rs_hw_verbs verbs;
static pthread_once_t verbs_once = PTHREAD_ONCE_INIT;

struct sym {
	const char *name;
	const char *version;
	size_t offset; /* of the function pointer in struct rs_hw_verbs */
};

#define SYM(field, name, version) { name, version, offsetof(struct rs_hw_verbs, field) }

/* Node names from rdma-core's libibverbs/libibverbs.map.in and
 * providers/mlx5/libmlx5.map. */
static const struct sym verbs_required[] = {
	SYM(get_device_list, "ibv_get_device_list", "IBVERBS_1.1"),
	SYM(free_device_list, "ibv_free_device_list", "IBVERBS_1.1"),
	SYM(get_device_name, "ibv_get_device_name", "IBVERBS_1.1"),
	SYM(get_device_guid, "ibv_get_device_guid", "IBVERBS_1.1"),
	SYM(open_device, "ibv_open_device", "IBVERBS_1.1"),
	SYM(close_device, "ibv_close_device", "IBVERBS_1.1"),
	SYM(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1"),
	SYM(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1"),
};
static const struct sym verbs_sharing[] = {
	SYM(import_device, "ibv_import_device", "IBVERBS_1.10"),
	SYM(import_pd, "ibv_import_pd", "IBVERBS_1.10"),
	SYM(unimport_pd, "ibv_unimport_pd", "IBVERBS_1.10"),
};
static const struct sym verbs_mr[] = {
	SYM(reg_mr, "ibv_reg_mr", "IBVERBS_1.1"),
	SYM(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1"),
};
static const struct sym verbs_mr_sharing[] = {
	SYM(import_mr, "ibv_import_mr", "IBVERBS_1.10"),
	SYM(unimport_mr, "ibv_unimport_mr", "IBVERBS_1.10"),
};
static const struct sym verbs_dm_sharing[] = {
	SYM(import_dm, "ibv_import_dm", "IBVERBS_1.13"),
	SYM(unimport_dm, "ibv_unimport_dm", "IBVERBS_1.13"),
};
static const struct sym mlx5_required[] = {
	SYM(is_supported, "mlx5dv_is_supported", "MLX5_1.8"),
	SYM(alloc_var, "mlx5dv_alloc_var", "MLX5_1.12"),
	SYM(free_var, "mlx5dv_free_var", "MLX5_1.12"),
};
static const struct sym mlx5_obj[] = {
	SYM(init_obj, "mlx5dv_init_obj", "MLX5_1.2"),
};
static const struct sym mlx5_export[] = {
	SYM(var_export, "mlx5dv_var_export", "MLX5_1.27"),
	SYM(var_import, "mlx5dv_var_import", "MLX5_1.27"),
	SYM(var_unimport, "mlx5dv_var_unimport", "MLX5_1.27"),
	SYM(get_export_sizes, "_mlx5dv_get_export_sizes", "MLX5_1.27"),
};

#define NSYMS(a) (sizeof(a) / sizeof((a)[0]))

static void **slot_of(const struct sym *s)
{
	return (void **)((char *)&verbs + s->offset);
}

/* Resolve every symbol of set; on the first miss clear them all and return
 * that symbol (so a half-resolved set can never be used). */
static const struct sym *resolve(void *lib, const struct sym *set, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *p = dlvsym(lib, set[i].name, set[i].version);
		if (!p) {
			for (size_t j = 0; j < n; j++)
				*slot_of(&set[j]) = NULL;
			return &set[i];
		}
		*slot_of(&set[i]) = p;
	}
	return NULL;
}

static const char *lib_path(const char *env, const char *soname)
{
	const char *p = secure_getenv(env);
	return p && *p ? p : soname;
}

/* dlopen, keeping dlerror()'s text (it names the file and the reason). */
static void *open_lib(const char *path, char *why, size_t cap)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		const char *e = dlerror();
		snprintf(why, cap, "cannot load %s: %s", path, e ? e : "unknown error");
	}
	return lib;
}

static void load_mlx5(void)
{
	const char *path = lib_path("RSHARE_LIBMLX5", "libmlx5.so.1");
	const struct sym *miss;
	void *lib = open_lib(path, verbs.mlx5_why, sizeof(verbs.mlx5_why));

	if (!lib)
		return;
	miss = resolve(lib, mlx5_required, NSYMS(mlx5_required));
	if (miss) {
		snprintf(verbs.mlx5_why, sizeof(verbs.mlx5_why),
			 "%s has no %s@%s", path, miss->name, miss->version);
		return; /* kept loaded: unloading a library is never worth the risk */
	}
	verbs.mlx5_ok = true;
	resolve(lib, mlx5_obj, NSYMS(mlx5_obj));
	miss = resolve(lib, mlx5_export, NSYMS(mlx5_export));
	verbs.export_ok = !miss;
	verbs.export_missing = miss ? miss->name : NULL;
}

static void load(void)
{
	const char *path = lib_path("RSHARE_LIBIBVERBS", "libibverbs.so.1");
	const struct sym *miss;
	void *lib = open_lib(path, verbs.why, sizeof(verbs.why));

	snprintf(verbs.mlx5_why, sizeof(verbs.mlx5_why), "libibverbs is not loaded");
	verbs.export_missing = "mlx5dv_var_export";
	if (!lib)
		return;
	miss = resolve(lib, verbs_required, NSYMS(verbs_required));
	if (miss) {
		snprintf(verbs.why, sizeof(verbs.why), "%s has no %s@%s", path,
			 miss->name, miss->version);
		return;
	}
	verbs.verbs_ok = true;
	/* Sharing needs rdma-core 31+; older ones still list and open. */
	resolve(lib, verbs_sharing, NSYMS(verbs_sharing));
	resolve(lib, verbs_mr, NSYMS(verbs_mr));
	resolve(lib, verbs_mr_sharing, NSYMS(verbs_mr_sharing));
	resolve(lib, verbs_dm_sharing, NSYMS(verbs_dm_sharing));
	/* libmlx5 after libibverbs: its DT_NEEDED libibverbs.so.1 then binds to
	 * the library just loaded (matched by soname), not to another copy. */
	load_mlx5();
}

const struct rs_hw_verbs *rs_hw_verbs(void)
{
	pthread_once(&verbs_once, load);
	return &verbs;
}
