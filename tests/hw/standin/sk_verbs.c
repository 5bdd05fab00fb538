/*
 * Stand-in libibverbs.so.1: the libibverbs calls rshare uses, with
 * rdma-core's signatures, symbol versions, return conventions and errno
 * values, over the ufile model of sk_kernel.c. Two devices:
 *   mlx5_sim0  an mlx5 device (VARs through the stand-in libmlx5)
 *   rxe_sim1   a device of another provider (no VARs)
 *
 * Test hook: STANDIN_FAIL_IMPORT in the environment makes
 * ibv_import_device() fail after its provider adopted the fd, which then
 * closes it, as rdma-core does when a provider's import step fails (see
 * fail_adopted() for the value "squat").
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sk_kernel.h"

#define SK_DEVICE(n, uverbs, g, is_mlx5)                                   \
	{                                                                  \
		.ibdev = {                                                 \
			.node_type = IBV_NODE_CA,                          \
			.transport_type = IBV_TRANSPORT_IB,                \
			.name = n,                                         \
			.dev_name = uverbs,                                \
			.dev_path = "/sys/class/infiniband_verbs/" uverbs, \
			.ibdev_path = "/sys/class/infiniband/" n,          \
		},                                                         \
		.guid = g, .mlx5 = is_mlx5,                                \
	}

static struct sk_device devices[] = {
	SK_DEVICE("mlx5_sim0", "uverbs0", 0x0002c90300a1b2c0ULL, true),
	SK_DEVICE("rxe_sim1", "uverbs1", 0x0002c90300a1b2c1ULL, false),
};
#define NDEVICES (sizeof(devices) / sizeof(devices[0]))

bool sk_device_known(struct ibv_device *dev)
{
	for (size_t i = 0; i < NDEVICES; i++)
		if (dev == &devices[i].ibdev)
			return true;
	return false;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(NDEVICES + 1, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < NDEVICES; i++)
		list[i] = &devices[i].ibdev;
	if (num_devices)
		*num_devices = (int)NDEVICES;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	/* rdma-core returns the node GUID in network byte order. */
	return htobe64(((struct sk_device *)device)->guid);
}

/* Wrap a ufile fd in a context; on failure the fd is closed (the context
 * had adopted it, as rdma-core's provider alloc/import steps do). */
static struct ibv_context *new_context(struct sk_device *dev, int fd,
				       struct sk_ufile *uf)
{
	struct sk_context *ctx = calloc(1, sizeof(*ctx));

	if (!uf && !(uf = sk_ufile_map(fd))) {
		int err = errno;
		free(ctx);
		close(fd);
		errno = err;
		return NULL;
	}
	if (!ctx) {
		sk_ufile_unmap(uf);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	ctx->ibctx.device = &dev->ibdev;
	ctx->ibctx.cmd_fd = fd;
	ctx->ibctx.async_fd = -1;
	ctx->ibctx.num_comp_vectors = 1;
	pthread_mutex_init(&ctx->ibctx.mutex, NULL);
	ctx->dev = dev;
	ctx->uf = uf;
	return &ctx->ibctx;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sk_ufile *uf;
	int fd, err;

	if (!sk_device_known(device)) {
		errno = ENODEV;
		return NULL;
	}
	err = sk_ufile_create((uint32_t)((struct sk_device *)device - devices), &fd, &uf);
	if (err) {
		errno = err;
		return NULL;
	}
	return new_context((struct sk_device *)device, fd, uf);
}

/* The STANDIN_FAIL_IMPORT hook: the provider step failed after adopting
 * cmd_fd, so it is closed. With the value "squat" another descriptor (of
 * /dev/null) then takes the same number, as another thread's open() could;
 * its number is left in STANDIN_SQUATTER_FD for the test, which must find
 * it still open: closing "the fd" again after the failure would close it. */
static void fail_adopted(int cmd_fd)
{
	char num[16];
	int s;

	close(cmd_fd);
	if (strcmp(getenv("STANDIN_FAIL_IMPORT"), "squat") != 0)
		return;
	s = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (s >= 0 && s != cmd_fd) {
		dup3(s, cmd_fd, O_CLOEXEC);
		close(s);
	}
	snprintf(num, sizeof(num), "%d", cmd_fd);
	setenv("STANDIN_SQUATTER_FD", num, 1);
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	uint32_t index;
	int err = sk_ufile_probe(cmd_fd, &index);

	/* Refusals before any provider saw the fd leave it with the caller. */
	if (err) {
		errno = err;
		return NULL;
	}
	if (index >= NDEVICES) {
		errno = ENODEV;
		return NULL;
	}
	/* From here on the context owns cmd_fd, failure or not. */
	if (getenv("STANDIN_FAIL_IMPORT")) {
		fail_adopted(cmd_fd);
		errno = EIO;
		return NULL;
	}
	return new_context(&devices[index], cmd_fd, NULL);
}

int ibv_close_device(struct ibv_context *context)
{
	struct sk_context *ctx = (struct sk_context *)context;

	sk_ufile_unmap(ctx->uf);
	close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

static struct ibv_pd *new_pd(struct ibv_context *context, uint32_t handle)
{
	struct ibv_pd *pd = malloc(sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = context;
	pd->handle = handle;
	return pd;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	uint32_t handle;
	struct ibv_pd *pd;
	/* Test hook: STANDIN_FAIL_ALLOC_PD=<errno> makes the kernel refuse, as
	 * it does with EPERM, EACCES, EOPNOTSUPP, EIO... */
	const char *inject = getenv("STANDIN_FAIL_ALLOC_PD");
	int err = inject ? atoi(inject) : sk_obj_create(context, SK_PD, &handle, NULL);

	if (err) {
		errno = err;
		return NULL;
	}
	pd = new_pd(context, handle);
	if (!pd)
		sk_obj_destroy(context, SK_PD, handle);
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	/* Returns an errno value; on failure the local object stays, so the
	 * caller can still unimport it (rdma-core's contract). */
	int err = sk_obj_destroy(pd->context, SK_PD, pd->handle);

	if (err)
		return err;
	free(pd);
	return 0;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	/* The provider asks the kernel whether the handle names a PD. */
	int err = sk_obj_lookup(context, SK_PD, pd_handle, NULL);

	if (err) {
		errno = err;
		return NULL;
	}
	return new_pd(context, pd_handle);
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	free(pd); /* local only */
}
