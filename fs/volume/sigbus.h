/* SPDX-License-Identifier: MIT */
/* sigbus.h -- a SIGBUS on a device's mapping is a fault of that device,
 * not the end of the process */
#ifndef DG_SIGBUS_H
#define DG_SIGBUS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every device is a mapping, read by loads and written by stores. When
 * the store behind a page cannot serve it -- an image file cut short
 * under the mapping, a store into a hole of a sparse image whose file
 * system is full, a poisoned line of pmem (BUS_MCEERR_AR) -- the kernel
 * sends SIGBUS, whose default action ends the process. The media layer
 * watches its mappings: a SIGBUS inside one puts a private page of
 * zeros over the page that faulted, so the load or store completes, and
 * records the fault for the device to find (media.c latches the volume
 * read-only: nothing stored since is durable, and reads are verified).
 * A SIGBUS anywhere else goes on to the handler that was there before,
 * or ends the process as it always did.
 */

/* The fault record of one watched mapping: read with atomic loads. */
struct dg_sigbus_rec {
	_Atomic uint64_t pages;	/* pages replaced by zeros since watched */
	_Atomic uint64_t first;	/* byte offset of the first fault */
};

/* Watch [base, base + len), mapped with prot (PROT_READ, | PROT_WRITE),
 * installing the handler on the first call of the process. *rec is the
 * mapping's record until dg_sigbus_unwatch(rec) (before the unmap).
 * 0, -EMFILE when every slot is taken, or sigaction()'s error. */
int dg_sigbus_watch(void *base, size_t len, int prot,
		    struct dg_sigbus_rec **rec);
void dg_sigbus_unwatch(struct dg_sigbus_rec *rec);

/* Faults recorded in every watched mapping since the process started. */
uint64_t dg_sigbus_total(void);

#endif /* DG_SIGBUS_H */
