//! The vectors of the tools' texts, by content, and the cache file that keeps them across runs.
//!
//! A vector is filed under the hash of the text it embeds ([`ContentKey`]) in a file named after
//! the model ([`ModelKey`]): a tool whose text has not changed is never embedded twice, and a
//! changed description, a different model or other prefixes simply miss. A removed tool's row
//! stays, unowned, so that the tool coming back (a server that reconnects) costs nothing; rows
//! this index does not own are dropped once they outnumber the owned ones by [`SPARE_ROWS`].
//!
//! The file: `TSEMB001`, the model key (32 bytes), the dimension (u32), then one record per
//! row: the content key (16 bytes) and the vector (f32), all little-endian. It is written whole
//! to a temporary file and renamed over the old one, so a reader never sees half a file and two
//! processes writing at once lose at most the other's new rows.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};

use super::EmbeddingError;

const MAGIC: &[u8; 8] = b"TSEMB001";
const HEADER: usize = 8 + 32 + 4;
/// Unowned rows are dropped when there are more of them than owned rows plus this many: a
/// cache folder is shared by every catalogue that names it (several projects' agents, the six
/// benchmark sets), so the rows one index does not own are mostly another's, kept up to about
/// 30 MB at 384 dimensions.
const SPARE_ROWS: usize = 20_000;

/// Identifies a model and everything that changes its vectors (weights, tokenizer, pooling,
/// prefixes, length): embeddings are cached per model key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModelKey(pub [u8; 32]);

impl ModelKey {
    /// The key in hexadecimal.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The first 16 bytes of the SHA-256 of a text.
pub(crate) type ContentKey = [u8; 16];

pub(crate) fn content_key(text: &str) -> ContentKey {
    let digest = Sha256::digest(text.as_bytes());
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    key
}

/// No tool owns the row.
pub(crate) const UNOWNED: u32 = u32::MAX;

/// Unit vectors, one row per distinct text, each owned by at most one tool.
pub(crate) struct VectorStore {
    pub(crate) dimension: usize,
    model: ModelKey,
    /// Row after row.
    pub(crate) vectors: Vec<f32>,
    keys: Vec<ContentKey>,
    /// The tool (an id of the dense index) owning each row, or [`UNOWNED`].
    pub(crate) owners: Vec<u32>,
    row_of: FxHashMap<ContentKey, u32>,
    owned: usize,
    /// Rows not yet in the cache file.
    pub(crate) unsaved: usize,
}

impl VectorStore {
    pub(crate) fn new(model: ModelKey, dimension: usize) -> Self {
        Self {
            dimension,
            model,
            vectors: Vec::new(),
            keys: Vec::new(),
            owners: Vec::new(),
            row_of: FxHashMap::default(),
            owned: 0,
            unsaved: 0,
        }
    }

    /// The cache file for this model in `dir`.
    pub(crate) fn file_in(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.embeddings", &self.model.hex()[..32]))
    }

    pub(crate) fn rows(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn row(&self, row: u32) -> &[f32] {
        let start = row as usize * self.dimension;
        &self.vectors[start..start + self.dimension]
    }

    pub(crate) fn find(&self, key: &ContentKey) -> Option<u32> {
        self.row_of.get(key).copied()
    }

    /// Files a new row (unowned) and returns it.
    pub(crate) fn push(&mut self, key: ContentKey, vector: &[f32]) -> u32 {
        let row = self.keys.len() as u32;
        self.keys.push(key);
        self.vectors.extend_from_slice(vector);
        self.owners.push(UNOWNED);
        self.row_of.insert(key, row);
        self.unsaved += 1;
        row
    }

    pub(crate) fn set_owner(&mut self, row: u32, owner: u32) {
        let slot = &mut self.owners[row as usize];
        match (*slot == UNOWNED, owner == UNOWNED) {
            (true, false) => self.owned += 1,
            (false, true) => self.owned -= 1,
            _ => {}
        }
        *slot = owner;
    }

    /// Whether enough rows are unowned to be worth dropping.
    pub(crate) fn wants_compaction(&self) -> bool {
        self.rows() - self.owned > self.owned + SPARE_ROWS
    }

    /// Drops the unowned rows; `moved` is told each owner's new row.
    pub(crate) fn compact(&mut self, mut moved: impl FnMut(u32, u32)) {
        let mut kept = Self::new(self.model, self.dimension);
        for row in 0..self.rows() as u32 {
            let owner = self.owners[row as usize];
            if owner != UNOWNED {
                let new_row = kept.push(self.keys[row as usize], self.row(row));
                kept.set_owner(new_row, owner);
                moved(owner, new_row);
            }
        }
        kept.unsaved = self.rows();
        *self = kept;
    }

    /// The rows of a cache file, if it is one for this model and dimension (anything else, a
    /// missing or foreign file, gives none: its rows are embedded again and the file replaced).
    pub(crate) fn load(&mut self, path: &Path) -> usize {
        let Ok(bytes) = std::fs::read(path) else {
            return 0;
        };
        if bytes.len() < HEADER
            || &bytes[..8] != MAGIC
            || bytes[8..40] != self.model.0
            || bytes[40..44] != (self.dimension as u32).to_le_bytes()
        {
            return 0;
        }
        let record = 16 + 4 * self.dimension;
        let mut vector = vec![0f32; self.dimension];
        let mut loaded = 0;
        // A torn tail (a record cut short) is left out.
        for chunk in bytes[HEADER..].chunks_exact(record) {
            let mut key = [0u8; 16];
            key.copy_from_slice(&chunk[..16]);
            if self.row_of.contains_key(&key) {
                continue;
            }
            for (v, b) in vector.iter_mut().zip(chunk[16..].chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            self.push(key, &vector);
            loaded += 1;
        }
        self.unsaved = self.unsaved.saturating_sub(loaded);
        loaded
    }

    /// Writes every row to `path` (through a temporary file renamed over it).
    pub(crate) fn save(&mut self, path: &Path) -> Result<(), EmbeddingError> {
        let fail = |source| EmbeddingError::Cache {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let temporary = path.with_extension(format!("tmp{}", std::process::id()));
        let mut bytes = Vec::with_capacity(HEADER + self.rows() * (16 + 4 * self.dimension));
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.model.0);
        bytes.extend_from_slice(&(self.dimension as u32).to_le_bytes());
        for row in 0..self.rows() as u32 {
            bytes.extend_from_slice(&self.keys[row as usize]);
            for v in self.row(row) {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
        let written = std::fs::File::create(&temporary)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&temporary, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(fail(e));
        }
        self.unsaved = 0;
        Ok(())
    }
}
