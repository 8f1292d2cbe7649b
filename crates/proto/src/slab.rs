//! A slab of fixed-size values addressed by `u32` slots, grown in chunks
//! that never move.
//!
//! Relays hold cells (a few hundred bytes each) in many small queues. Kept
//! in a `VecDeque` per queue, every queue pays a doubling ring's unused
//! half and a copy of all its cells at each growth; thousands of queues
//! then hold far more memory than cells. Queues of slot numbers over one
//! slab per node hold four bytes per cell, and the node's memory follows
//! the cells it holds at once.
//!
//! Chunk sizes double from [`FIRST_CHUNK`] values to [`MAX_CHUNK`] and then
//! stay there, so a node that only ever holds a few values (most clients of
//! a large network) keeps one small chunk. Freed slots are reused last in,
//! first out; memory is never given back (a node's slab is as large as the
//! most values it held at once).

/// Values in each of the first two chunks (chunk `k ≥ 1` then holds
/// `FIRST_CHUNK · 2^(k−1)` values, up to [`MAX_CHUNK`]).
pub const FIRST_CHUNK: u32 = 8;
/// Values in every chunk after the doubling ones.
pub const MAX_CHUNK: u32 = 256;
/// The first slot of the chunks of [`MAX_CHUNK`] values: chunk 6 covers
/// `256..512`, and chunk 7 starts here.
const FIXED_FROM: u32 = 2 * MAX_CHUNK;
/// The index of the chunk that starts at [`FIXED_FROM`].
const FIXED_CHUNK: u32 = 7;

/// Chunk and offset of slot `id`.
fn locate(id: u32) -> (usize, usize) {
    if id < FIRST_CHUNK {
        (0, id as usize)
    } else if id < FIXED_FROM {
        // Chunk k ≥ 1 covers 2^(k+2) .. 2^(k+3).
        let b = 31 - id.leading_zeros();
        ((b - 2) as usize, (id - (1 << b)) as usize)
    } else {
        let k = id - FIXED_FROM;
        (
            (FIXED_CHUNK + k / MAX_CHUNK) as usize,
            (k % MAX_CHUNK) as usize,
        )
    }
}

/// Values in chunk `k`.
fn chunk_len(k: usize) -> u32 {
    match k {
        0 => FIRST_CHUNK,
        _ => (FIRST_CHUNK << (k - 1).min(5)).min(MAX_CHUNK),
    }
}

/// Values of type `T` in numbered slots (see the [module docs](self)).
#[derive(Debug)]
pub struct Slab<T> {
    chunks: Vec<Box<[T]>>,
    /// Slots ever handed out (`0..len`).
    len: u32,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            chunks: Vec::new(),
            len: 0,
            free: Vec::new(),
        }
    }
}

impl<T: Clone> Slab<T> {
    /// A slot whose contents are unspecified: a freed slot keeps what it
    /// held, and a new chunk is filled with `blank`.
    pub fn alloc(&mut self, blank: &T) -> u32 {
        if let Some(i) = self.free.pop() {
            return i;
        }
        let id = self.len;
        assert!(id < u32::MAX, "slab full");
        let (k, _) = locate(id);
        if k == self.chunks.len() {
            self.chunks
                .push(vec![blank.clone(); chunk_len(k) as usize].into_boxed_slice());
        }
        self.len += 1;
        id
    }

    /// A slot holding `v`.
    pub fn insert(&mut self, v: T) -> u32 {
        let id = self.alloc(&v);
        *self.get_mut(id) = v;
        id
    }
}

impl<T> Slab<T> {
    /// Gives slot `id` back; its value stays until the slot is handed out
    /// again.
    pub fn free(&mut self, id: u32) {
        debug_assert!(id < self.len);
        self.free.push(id);
    }
    pub fn get(&self, id: u32) -> &T {
        let (k, o) = locate(id);
        &self.chunks[k][o]
    }
    pub fn get_mut(&mut self, id: u32) -> &mut T {
        let (k, o) = locate(id);
        &mut self.chunks[k][o]
    }
    /// Slots in use.
    pub fn live(&self) -> usize {
        self.len as usize - self.free.len()
    }
    /// Slots ever handed out (the most values held at once).
    pub fn capacity(&self) -> usize {
        self.len as usize
    }
    /// Chunks allocated.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_double_to_the_maximum_and_cover_every_slot_once() {
        let starts: Vec<u32> = (0..10)
            .scan(0, |s, k| {
                let a = *s;
                *s += chunk_len(k);
                Some(a)
            })
            .collect();
        assert_eq!(starts, [0, 8, 16, 32, 64, 128, 256, 512, 768, 1024]);
        for (k, &a) in starts.iter().enumerate() {
            assert_eq!(locate(a), (k, 0));
            let last = a + chunk_len(k) - 1;
            assert_eq!(locate(last), (k, chunk_len(k) as usize - 1));
        }
    }

    #[test]
    fn values_stay_in_their_slots_and_freed_slots_are_reused() {
        let mut s: Slab<[u8; 300]> = Slab::default();
        let ids: Vec<u32> = (0..2000u32)
            .map(|i| {
                let mut v = [0u8; 300];
                v[..4].copy_from_slice(&i.to_be_bytes());
                v[299] = i as u8;
                s.insert(v)
            })
            .collect();
        assert_eq!(ids, (0..2000).collect::<Vec<_>>());
        for &i in &ids {
            assert_eq!(s.get(i)[..4], i.to_be_bytes());
            assert_eq!(s.get(i)[299], i as u8);
        }
        // 0..512 in seven doubling chunks, then six of 256.
        assert_eq!(s.chunks(), 13);
        s.free(7);
        s.free(1500);
        assert_eq!(s.live(), 1998);
        assert_eq!(s.alloc(&[0; 300]), 1500);
        assert_eq!(s.insert([9; 300]), 7);
        assert_eq!(s.get(7)[0], 9);
        assert_eq!((s.live(), s.capacity(), s.chunks()), (2000, 2000, 13));
    }
}
