//! Sentence embeddings from a model the user has on disk: a sentence-transformers BERT model
//! (`config.json`, `vocab.txt`, `model.safetensors`, optionally `sentence_bert_config.json`), such as
//! all-MiniLM-L6-v2, run in process with mean pooling and L2 normalisation. Nothing is downloaded:
//! the caller names the folder. The result is what `cmp_memories.embedding` and `query_embedding`
//! take, so the vector retriever ranks by the model's cosine.

mod bert;
mod wordpiece;

use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

/// Tokens a text is cut to when the model folder does not say (`max_seq_length`).
const DEFAULT_MAX_TOKENS: usize = 256;

/// A loaded embedding model.
#[derive(Debug)]
pub struct Embedder {
    vocab: wordpiece::WordPiece,
    bert: bert::Bert,
    max_tokens: usize,
    dims: usize,
    /// Embeddings of recent tasks ([`Embedder::embed_cached`]).
    recent: Mutex<HashMap<String, Vec<f32>>>,
}

/// A model folder as loaded: its canonical path, and the size and modification time of its weights.
type ModelFile = (PathBuf, u64, Option<SystemTime>);

/// Tasks whose embeddings [`Embedder::embed_cached`] keeps (all are dropped when it is full).
const RECENT_TASKS: usize = 256;
/// Longest task [`Embedder::embed_cached`] keeps.
const RECENT_CHARS: usize = 1024;

impl Embedder {
    /// Loads the model in `dir`.
    pub fn load(dir: &Path) -> Result<Embedder> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| Error::invalid("embedder", format!("cannot read {name} in {}: {e}", dir.display())))
        };
        let config: Value = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| Error::invalid("embedder", format!("config.json is not JSON: {e}")))?;
        let shape = bert::Shape::from_config(&config)?;
        let vocab = wordpiece::WordPiece::parse(&String::from_utf8_lossy(&read("vocab.txt")?))?;
        let rows = config.get("vocab_size").and_then(Value::as_u64).unwrap_or(0) as usize;
        if vocab.id_bound() > rows {
            return Err(Error::invalid(
                "embedder",
                format!("vocab.txt has {} tokens, config.json vocab_size {rows}", vocab.id_bound()),
            ));
        }
        let bert = bert::Bert::new(shape, bert::read_tensors(&read("model.safetensors")?)?, rows)?;
        let max_tokens = std::fs::read(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|c| c.get("max_seq_length").and_then(Value::as_u64))
            .map_or(DEFAULT_MAX_TOKENS, |m| m as usize)
            .clamp(2, shape.max_positions);
        Ok(Embedder { vocab, bert, max_tokens, dims: shape.hidden, recent: Mutex::default() })
    }

    /// The model loaded from `dir`, shared by every connection of the process (loaded again when
    /// its `model.safetensors` changes size or modification time).
    pub fn shared(dir: &Path) -> Result<Arc<Embedder>> {
        static LOADED: OnceLock<Mutex<HashMap<ModelFile, Arc<Embedder>>>> = OnceLock::new();
        let canonical = dir
            .canonicalize()
            .map_err(|e| Error::invalid("embedder", format!("cannot open {}: {e}", dir.display())))?;
        let meta = std::fs::metadata(canonical.join("model.safetensors")).map_err(|e| {
            Error::invalid("embedder", format!("cannot read model.safetensors in {}: {e}", dir.display()))
        })?;
        let key = (canonical, meta.len(), meta.modified().ok());
        let cache = LOADED.get_or_init(Mutex::default);
        if let Some(e) = cache.lock().map_err(|_| Error::Internal("embedder cache poisoned".into()))?.get(&key) {
            return Ok(e.clone());
        }
        let loaded = Arc::new(Embedder::load(&key.0)?);
        let mut cache = cache.lock().map_err(|_| Error::Internal("embedder cache poisoned".into()))?;
        cache.retain(|k, _| k.0 != key.0);
        Ok(cache.entry(key).or_insert(loaded).clone())
    }

    /// Dimensions of an embedding.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The embedding of `text`: unit length (all zeros only if the model gives a zero vector).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let ids = self.vocab.encode(text, self.max_tokens);
        let mut v = self.bert.mean_pooled(&ids);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }

    /// [`Embedder::embed`], remembered for short texts: a conversation asks about the same task at
    /// several budgets and pages.
    pub fn embed_cached(&self, text: &str) -> Vec<f32> {
        if text.len() > RECENT_CHARS {
            return self.embed(text);
        }
        if let Some(v) = self.recent.lock().ok().and_then(|r| r.get(text).cloned()) {
            return v;
        }
        let v = self.embed(text);
        if let Ok(mut recent) = self.recent.lock() {
            if recent.len() >= RECENT_TASKS {
                recent.clear();
            }
            recent.insert(text.to_string(), v.clone());
        }
        v
    }
}

/// An embedding as `cmp_memories.embedding` stores it: float32 little-endian (sqlite-vec's layout).
pub fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
