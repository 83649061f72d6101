/*
 * coefmem.h - libjpeg's whole-image coefficient arrays in their own mappings.
 *
 * A progressive decode keeps every coefficient of the image (128 bytes per block) in libjpeg's
 * virtual block arrays. libjpeg gets them from malloc and zeroes them; with glibc, arrays of a
 * few MB come from fresh pages on every image, and a quarter of the decode of a 2 MP
 * progressive photo went to page faults and zeroing. Here the arrays of an image, if they
 * take 256 KB or more in all, share one anonymous mapping, zero already, in whole transparent
 * huge pages (madvise): a few faults instead of one per 4 KB, and fewer TLB misses while the
 * scans are decoded. Smaller ones come from libjpeg's pool, zeroed, as before. In a process
 * without huge pages (the kernel's are off, or the process turned them off for itself, as Ceph's
 * OSDs do) the large ones come from the heap (calloc) instead: there a mapping of its own faults
 * every 4 KB on every call, and the heap reuses what the call before freed (an OSD's crop of a
 * 1 MP image: 880 faults and 14 ms of CPU in a mapping, 4 ms from the heap).
 *
 * It replaces the block-array methods of cinfo->mem (request_virt_barray, realize_virt_arrays,
 * access_virt_barray, and free_pool / self_destruct to unmap); sample arrays stay libjpeg's.
 * Every array is held in memory whole, as libjpeg's own manager does when max_memory_to_use
 * allows; arrays that do not fit in max_memory_to_use fail with JERR_NO_BACKING_STORE, as
 * there. Uses cinfo->client_data.
 */
#ifndef SOPHON_PREP_COEFMEM_H
#define SOPHON_PREP_COEFMEM_H

#include <stddef.h>
#include <stdio.h> /* jpeglib.h needs FILE and size_t first. */

#include <jpeglib.h>

struct sophon__coefmem {
    struct jvirt_barray_control *arrays; /* Requested in the JPOOL_IMAGE pool, in order. */
    struct jvirt_barray_control **tail;  /* Where the next one goes. */
    void (*realize)(j_common_ptr);
    void (*free_pool)(j_common_ptr, int);
    void (*self_destruct)(j_common_ptr);
};

/*
 * sophon__coefmem_install - route cinfo's block arrays through m, which must outlive cinfo
 * (until jpeg_destroy). Call right after jpeg_create_decompress.
 */
void sophon__coefmem_install(j_common_ptr cinfo, struct sophon__coefmem *m);

/*
 * sophon__coefmem_array - the first block of the index-th array requested (a decompressor's
 * coefficient controller asks for one per component, in component order), once realized, with
 * its blocks per row and rows (each row right after the one before); else NULL. The arrays
 * realized together lie one after the other, in that order.
 */
const JBLOCK *sophon__coefmem_array(const struct sophon__coefmem *m, int index, JDIMENSION *blocks,
                                    JDIMENSION *rows);

#endif /* SOPHON_PREP_COEFMEM_H */
