/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Diagnostics of the loaded rdma-core (doctor.h). */
#include <dlfcn.h>
#include <string.h>

#include "cli.h"
#include "doctor.h"

/* The nodes rshare resolves (capi/src/hw/hw_dl.c), one symbol each. */
static struct doctor_node nodes[] = {
	{ "libibverbs", "IBVERBS_1.1", "ibv_open_device", "devices, PDs, MRs", false },
	{ "libibverbs", "IBVERBS_1.10", "ibv_import_device", "sharing contexts, PDs, MRs (rdma-core 31)", false },
	{ "libibverbs", "IBVERBS_1.13", "ibv_import_dm", "sharing device memory (rdma-core 35)", false },
	{ "libmlx5", "MLX5_1.2", "mlx5dv_init_obj", "PD numbers, the table id", false },
	{ "libmlx5", "MLX5_1.8", "mlx5dv_is_supported", "telling mlx5 devices apart", false },
	{ "libmlx5", "MLX5_1.12", "mlx5dv_alloc_var", "VARs", false },
	{ "libmlx5", "MLX5_1.27", "mlx5dv_var_export", "sharing VARs (rdma-core 63)", false },
};
#define NNODES (sizeof(nodes) / sizeof(nodes[0]))

/* The path of the first mapped file whose name starts with base. */
static void mapped(const char *base, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[1024];

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/'), *name;

		if (!path)
			continue;
		path[strcspn(path, "\n")] = '\0';
		name = strrchr(path, '/') + 1;
		if (strncmp(name, base, strlen(base)) == 0 && name[strlen(base)] == '.') {
			snprintf(out, cap, "%s", path);
			break;
		}
	}
	fclose(f);
}

void doctor_probe(struct doctor *d)
{
	void *verbs, *mlx5;

	mapped("libibverbs", d->verbs_path, sizeof(d->verbs_path));
	mapped("libmlx5", d->mlx5_path, sizeof(d->mlx5_path));
	/* Already loaded by librshare: RTLD_NOLOAD only finds them. */
	verbs = d->verbs_path[0] ? dlopen(d->verbs_path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	mlx5 = d->mlx5_path[0] ? dlopen(d->mlx5_path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	for (size_t i = 0; i < NNODES; i++) {
		void *h = strcmp(nodes[i].lib, "libmlx5") == 0 ? mlx5 : verbs;

		nodes[i].resolved = h && dlvsym(h, nodes[i].symbol, nodes[i].node);
	}
	if (verbs)
		dlclose(verbs);
	if (mlx5)
		dlclose(mlx5);
	d->nodes = nodes;
	d->nnodes = NNODES;
}

bool doctor_has(const struct doctor *d, const char *node)
{
	for (size_t i = 0; i < d->nnodes; i++)
		if (strcmp(d->nodes[i].node, node) == 0)
			return d->nodes[i].resolved;
	return false;
}

const char *doctor_why_off(const struct doctor *d, int provider, uint32_t caps, uint32_t cap)
{
	if (caps & cap)
		return NULL;
	if (provider != RSHARE_PROVIDER_HW) /* sim0's table keeps serials itself */
		return cap == RSHARE_CAP_LEDGER ? NULL : "the simulated device does not offer it";
	if (cap == RSHARE_CAP_LEDGER)
		return "the context cannot share (no ledger is made for it)";
	if (!doctor_has(d, "IBVERBS_1.10"))
		return "libibverbs lacks IBVERBS_1.10 (rdma-core 31 or newer shares objects)";
	if (!(caps & RSHARE_CAP_PD))
		return "its provider implements no import (only mlx5 does; the others "
		       "answer EOPNOTSUPP)";
	switch (cap) {
	case RSHARE_CAP_VAR:
		if (!d->mlx5_path[0])
			return "libmlx5 is not loaded";
		if (!doctor_has(d, "MLX5_1.27"))
			return "libmlx5 lacks MLX5_1.27 (VAR export came with rdma-core 63)";
		return "not an mlx5 device";
	case RSHARE_CAP_DM:
		if (!doctor_has(d, "IBVERBS_1.13"))
			return "libibverbs lacks IBVERBS_1.13 (ibv_import_dm, rdma-core 35)";
		return "no device memory: no alloc_dm op, or max_dm_size is 0 (no on-chip "
		       "memory on this function)";
	default:
		return "not offered by the loaded rdma-core";
	}
}

const char *doctor_level(int provider, uint32_t caps)
{
	if (provider != RSHARE_PROVIDER_HW)
		return "table";
	if (caps & RSHARE_CAP_LEDGER)
		return "ledger";
	return caps & RSHARE_CAP_PD ? "bare" : "none";
}
