/*
 * interpose/ranges.c: a sorted array of non-overlapping ranges under a sequence lock.
 *
 * Readers (any thread, in a copy's wrapper) never block: they read the sequence number, search,
 * and retry if a writer moved it meanwhile. Writers (allocation wrappers) serialize on a mutex.
 * When the array grows, the old one is kept, not freed: a reader may still be searching it;
 * the sizes double, so what is kept is less than what is in use.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ranges.h"

#define MAX_RANGES (1u << 20)

struct range {
	uintptr_t base;
	uint64_t size;
	int kind;
};

struct table {
	struct range *_Atomic items;
	_Atomic size_t count;
	size_t capacity;
};

static struct table table;
static _Atomic unsigned seq;
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range **retired;
static size_t retired_count;
uint64_t ss_range_overflow;

/* Index of the first range whose base is > addr. */
static size_t upper_bound(const struct range *items, size_t count, uintptr_t addr)
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (__atomic_load_n(&items[mid].base, __ATOMIC_RELAXED) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ss_range_lookup(const void *ptr)
{
	uintptr_t addr = (uintptr_t)ptr;
	for (;;) {
		unsigned s1 = atomic_load_explicit(&seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		struct range *items = atomic_load_explicit(&table.items, memory_order_relaxed);
		size_t count = atomic_load_explicit(&table.count, memory_order_relaxed);
		int kind = 0;
		if (items && count) {
			size_t i = upper_bound(items, count, addr);
			if (i > 0) {
				uintptr_t base =
				    __atomic_load_n(&items[i - 1].base, __ATOMIC_RELAXED);
				uint64_t size =
				    __atomic_load_n(&items[i - 1].size, __ATOMIC_RELAXED);
				if (addr - base < size)
					kind =
					    __atomic_load_n(&items[i - 1].kind, __ATOMIC_RELAXED);
			}
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&seq, memory_order_relaxed) == s1)
			return kind;
	}
}

static void write_begin(void)
{
	pthread_mutex_lock(&writer_lock);
	atomic_fetch_add_explicit(&seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void write_end(void)
{
	atomic_fetch_add_explicit(&seq, 1, memory_order_release);
	pthread_mutex_unlock(&writer_lock);
}

static int grow(void)
{
	size_t capacity = table.capacity ? table.capacity * 2 : 1024;
	if (capacity > MAX_RANGES)
		return -1;
	struct range *items = malloc(capacity * sizeof(*items));
	struct range **list = realloc(retired, (retired_count + 1) * sizeof(*retired));
	if (!items || !list) {
		free(items);
		if (list)
			retired = list;
		return -1;
	}
	retired = list;
	struct range *old = atomic_load(&table.items);
	if (old) {
		memcpy(items, old, atomic_load(&table.count) * sizeof(*items));
		retired[retired_count++] = old;
	}
	atomic_store(&table.items, items);
	table.capacity = capacity;
	return 0;
}

void ss_range_add(const void *base, uint64_t size, int kind)
{
	if (base == NULL || size == 0)
		return;
	int saved_errno = errno; /* SHIM-2: a failed malloc here must not show in the program */
	uintptr_t addr = (uintptr_t)base;
	write_begin();
	size_t count = atomic_load(&table.count);
	if (count == table.capacity && grow() != 0) {
		ss_range_overflow++;
		write_end();
		errno = saved_errno;
		return;
	}
	struct range *items = atomic_load(&table.items);
	size_t i = upper_bound(items, count, addr);
	if (i > 0 && items[i - 1].base == addr) { /* reused address: replace */
		items[i - 1].size = size;
		items[i - 1].kind = kind;
	} else {
		memmove(&items[i + 1], &items[i], (count - i) * sizeof(*items));
		items[i] = (struct range){addr, size, kind};
		atomic_store(&table.count, count + 1);
	}
	write_end();
	errno = saved_errno;
}

int ss_range_remove(const void *base, uint64_t *size)
{
	uintptr_t addr = (uintptr_t)base;
	int kind = 0;
	if (size)
		*size = 0;
	write_begin();
	struct range *items = atomic_load(&table.items);
	size_t count = atomic_load(&table.count);
	size_t i = items ? upper_bound(items, count, addr) : 0;
	if (i > 0 && items[i - 1].base == addr) {
		kind = items[i - 1].kind;
		if (size)
			*size = items[i - 1].size;
		memmove(&items[i - 1], &items[i], (count - i) * sizeof(*items));
		atomic_store(&table.count, count - 1);
	}
	write_end();
	return kind;
}

void ss_range_reset(void)
{
	pthread_mutex_init(&writer_lock, NULL);
	for (size_t i = 0; i < retired_count; i++)
		free(retired[i]);
	free(retired);
	retired = NULL;
	retired_count = 0;
	free(atomic_load(&table.items));
	atomic_store(&table.items, NULL);
	atomic_store(&table.count, 0);
	table.capacity = 0;
	atomic_store(&seq, 0);
}
