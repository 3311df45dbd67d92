//! A counting allocator, so the benchmark can report the memory an index holds.
//!
//! Each thread counts in its own slot (one cache line each), and the slots are summed when
//! read: threads allocating at the same time (an index built on all cores) never contend for
//! one counter, so counting does not slow down what is being timed. A block freed by another
//! thread than the one that allocated it moves the count from one slot to another; the sum stays
//! right.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// The system allocator, counting the bytes currently allocated.
pub struct Counting;

const SLOTS: usize = 16;

#[repr(align(64))]
struct Slot(AtomicIsize);

static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
/// The slot the next thread to allocate takes (modulo [`SLOTS`]).
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot, or `usize::MAX` before its first allocation. No destructor, so it
    /// may be read while the thread is being torn down.
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn slot() -> &'static AtomicIsize {
    let index = MY_SLOT
        .try_with(|slot| {
            if slot.get() == usize::MAX {
                slot.set(NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS);
            }
            slot.get()
        })
        // A thread whose locals are gone counts in the first slot.
        .unwrap_or(0);
    &COUNTS[index].0
}

fn count(bytes: usize, sign: isize) {
    slot().fetch_add(sign * bytes as isize, Ordering::Relaxed);
}

// SAFETY: every call forwards to the system allocator unchanged; the counter is only bookkeeping.
#[allow(
    unsafe_code,
    reason = "a GlobalAlloc implementation is unsafe by definition; it only forwards to System"
)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size(), 1);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(layout.size(), -1);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size, 1);
        count(layout.size(), -1);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes currently allocated.
pub fn allocated() -> usize {
    let total: isize = COUNTS
        .iter()
        .map(|slot| slot.0.load(Ordering::Relaxed))
        .sum();
    total.max(0) as usize
}
