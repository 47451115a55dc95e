//! A BERT encoder's forward pass in f32 (embeddings, then self-attention and feed-forward layers with
//! post-layer normalisation and exact GELU), read from a `safetensors` file, as a sentence-transformers
//! model with mean pooling runs it. Matrix products go through `matrixmultiply`'s sgemm.

use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::HashMap;

/// The shape of the network, from the model's `config.json`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Width of every hidden state.
    pub hidden: usize,
    /// Attention heads per layer.
    pub heads: usize,
    /// Encoder layers.
    pub layers: usize,
    /// Width of the feed-forward layer.
    pub intermediate: usize,
    /// Positions the position embedding holds.
    pub max_positions: usize,
    /// Layer normalisation epsilon.
    pub eps: f32,
}

impl Shape {
    /// The shape `config.json` describes; only BERT encoders with GELU are accepted.
    pub fn from_config(config: &Value) -> Result<Shape> {
        let field = |k: &str| {
            config
                .get(k)
                .and_then(Value::as_u64)
                .filter(|v| *v > 0 && *v <= 1 << 16)
                .map(|v| v as usize)
                .ok_or_else(|| Error::invalid("embedder", format!("config.json needs a positive integer {k}")))
        };
        let act = config.get("hidden_act").and_then(Value::as_str).unwrap_or("gelu");
        if act != "gelu" {
            return Err(Error::invalid(
                "embedder",
                format!("config.json: hidden_act {act:?} is not supported (gelu only)"),
            ));
        }
        let shape = Shape {
            hidden: field("hidden_size")?,
            heads: field("num_attention_heads")?,
            layers: field("num_hidden_layers")?,
            intermediate: field("intermediate_size")?,
            max_positions: field("max_position_embeddings")?,
            eps: config.get("layer_norm_eps").and_then(Value::as_f64).unwrap_or(1e-12) as f32,
        };
        if shape.hidden % shape.heads != 0 {
            return Err(Error::invalid(
                "embedder",
                "config.json: hidden_size is not a multiple of num_attention_heads",
            ));
        }
        Ok(shape)
    }
}

/// Named tensors: shape and values, row-major.
pub type TensorMap = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// The f32 tensors of a `safetensors` file, by name (tensors of other types are left out).
pub fn read_tensors(bytes: &[u8]) -> Result<TensorMap> {
    let bad = |why: &str| Error::invalid("embedder", format!("model.safetensors {why}"));
    let len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
        .ok_or_else(|| bad("is too short"))?;
    let end = usize::try_from(len).ok().and_then(|l| l.checked_add(8)).filter(|e| *e <= bytes.len());
    let end = end.ok_or_else(|| bad("has a header longer than the file"))?;
    let header: serde_json::Map<String, Value> =
        serde_json::from_slice(&bytes[8..end]).map_err(|e| bad(&format!("has a bad header: {e}")))?;
    let data = &bytes[end..];
    let mut out = HashMap::new();
    for (name, t) in header.iter().filter(|(n, _)| *n != "__metadata__") {
        if t.get("dtype").and_then(Value::as_str) != Some("F32") {
            continue;
        }
        let nums = |k: &str| -> Option<Vec<usize>> {
            t.get(k)?.as_array()?.iter().map(|v| v.as_u64().map(|v| v as usize)).collect()
        };
        let (shape, offsets) = (nums("shape"), nums("data_offsets"));
        let (Some(shape), Some([from, to])) = (shape, offsets.as_deref().and_then(|o| <[usize; 2]>::try_from(o).ok()))
        else {
            return Err(bad(&format!("describes {name} without shape or offsets")));
        };
        let count = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d));
        let raw = data.get(from..to).filter(|r| Some(r.len()) == count.and_then(|c| c.checked_mul(4)));
        let raw = raw.ok_or_else(|| bad(&format!("holds {name} outside the file or of the wrong size")))?;
        let values = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        out.insert(name.clone(), (shape, values));
    }
    Ok(out)
}

/// y = x·Wᵀ + b for a weight of `out` rows of `inp` columns.
#[derive(Debug)]
struct Linear {
    w: Vec<f32>,
    b: Vec<f32>,
    inp: usize,
    out: usize,
}

impl Linear {
    fn apply(&self, x: &[f32], n: usize) -> Vec<f32> {
        let mut y: Vec<f32> = (0..n).flat_map(|_| self.b.iter().copied()).collect();
        let (inp, out) = (self.inp as isize, self.out as isize);
        // SAFETY: x holds n × inp values, w out × inp, y n × out; the strides address within them.
        unsafe {
            matrixmultiply::sgemm(
                n,
                self.inp,
                self.out,
                1.0,
                x.as_ptr(),
                inp,
                1,
                self.w.as_ptr(),
                1,
                inp,
                1.0,
                y.as_mut_ptr(),
                out,
                1,
            );
        }
        y
    }
}

/// Layer normalisation over each row of `width` values.
#[derive(Debug)]
struct Norm {
    g: Vec<f32>,
    b: Vec<f32>,
    eps: f32,
}

impl Norm {
    fn apply(&self, x: &mut [f32]) {
        for row in x.chunks_exact_mut(self.g.len()) {
            let n = row.len() as f32;
            let mean = row.iter().sum::<f32>() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.g).zip(&self.b) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

/// One encoder layer.
#[derive(Debug)]
struct Layer {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// A BERT encoder with its weights.
#[derive(Debug)]
pub struct Bert {
    shape: Shape,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
}

/// Takes the named tensors out of a `safetensors` map, under any of the usual prefixes.
struct Tensors(TensorMap);

impl Tensors {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let key = ["", "bert.", "model."].iter().map(|p| format!("{p}{name}")).find(|k| self.0.contains_key(k));
        let (got, values) = key
            .and_then(|k| self.0.remove(&k))
            .ok_or_else(|| Error::invalid("embedder", format!("model.safetensors has no f32 tensor {name}")))?;
        if got != shape {
            return Err(Error::invalid(
                "embedder",
                format!("model.safetensors: {name} has shape {got:?}, not {shape:?}"),
            ));
        }
        Ok(values)
    }

    fn linear(&mut self, name: &str, inp: usize, out: usize) -> Result<Linear> {
        let w = self.take(&format!("{name}.weight"), &[out, inp])?;
        Ok(Linear { w, b: self.take(&format!("{name}.bias"), &[out])?, inp, out })
    }

    fn norm(&mut self, name: &str, width: usize, eps: f32) -> Result<Norm> {
        let g = self.take(&format!("{name}.weight"), &[width])?;
        Ok(Norm { g, b: self.take(&format!("{name}.bias"), &[width])?, eps })
    }
}

impl Bert {
    /// The encoder of `shape` from its tensors (Hugging Face's BertModel names).
    pub fn new(shape: Shape, tensors: TensorMap, vocab: usize) -> Result<Bert> {
        let mut t = Tensors(tensors);
        let (h, eps) = (shape.hidden, shape.eps);
        let layers = (0..shape.layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                Ok(Layer {
                    q: t.linear(&format!("{p}.attention.self.query"), h, h)?,
                    k: t.linear(&format!("{p}.attention.self.key"), h, h)?,
                    v: t.linear(&format!("{p}.attention.self.value"), h, h)?,
                    o: t.linear(&format!("{p}.attention.output.dense"), h, h)?,
                    attn_norm: t.norm(&format!("{p}.attention.output.LayerNorm"), h, eps)?,
                    up: t.linear(&format!("{p}.intermediate.dense"), h, shape.intermediate)?,
                    down: t.linear(&format!("{p}.output.dense"), shape.intermediate, h)?,
                    out_norm: t.norm(&format!("{p}.output.LayerNorm"), h, eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let token_type = t.0.keys().find(|k| k.ends_with("token_type_embeddings.weight")).cloned();
        let types = token_type.and_then(|k| t.0.get(&k)).map_or(1, |(s, _)| s.first().copied().unwrap_or(1));
        Ok(Bert {
            word: t.take("embeddings.word_embeddings.weight", &[vocab, h])?,
            position: t.take("embeddings.position_embeddings.weight", &[shape.max_positions, h])?,
            token_type: t.take("embeddings.token_type_embeddings.weight", &[types, h])?,
            norm: t.norm("embeddings.LayerNorm", h, eps)?,
            layers,
            shape,
        })
    }

    /// The mean of the last hidden states of `ids` (at most `max_positions` of them, each < vocab).
    pub fn mean_pooled(&self, ids: &[u32]) -> Vec<f32> {
        let h = self.shape.hidden;
        let n = ids.len().min(self.shape.max_positions);
        let mut x = Vec::with_capacity(n * h);
        for (pos, id) in ids[..n].iter().enumerate() {
            let (w, p) = (*id as usize * h, pos * h);
            x.extend((0..h).map(|d| self.word[w + d] + self.position[p + d] + self.token_type[d]));
        }
        self.norm.apply(&mut x);
        for layer in &self.layers {
            x = self.layer(layer, x, n);
        }
        let mut mean = vec![0.0f32; h];
        for row in x.chunks_exact(h) {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v / n as f32);
        }
        mean
    }

    fn layer(&self, l: &Layer, x: Vec<f32>, n: usize) -> Vec<f32> {
        let context = self.attention(l, &x, n);
        let mut x1 = l.o.apply(&context, n);
        x1.iter_mut().zip(&x).for_each(|(a, b)| *a += b);
        l.attn_norm.apply(&mut x1);
        let mut up = l.up.apply(&x1, n);
        up.iter_mut().for_each(|v| *v = gelu(*v));
        let mut x2 = l.down.apply(&up, n);
        x2.iter_mut().zip(&x1).for_each(|(a, b)| *a += b);
        l.out_norm.apply(&mut x2);
        x2
    }

    /// Multi-head self-attention of the `n` rows of `x`, before the output projection.
    fn attention(&self, l: &Layer, x: &[f32], n: usize) -> Vec<f32> {
        let (h, heads) = (self.shape.hidden, self.shape.heads);
        let dh = h / heads;
        let (q, k, v) = (l.q.apply(x, n), l.k.apply(x, n), l.v.apply(x, n));
        let mut context = vec![0.0f32; n * h];
        let mut scores = vec![0.0f32; n * n];
        let scale = 1.0 / (dh as f32).sqrt();
        for head in 0..heads {
            let off = head * dh;
            // SAFETY: q, k, v and context hold n × h values; a head's columns off..off + dh lie within
            // each row; scores holds n × n.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    dh,
                    n,
                    scale,
                    q.as_ptr().add(off),
                    h as isize,
                    1,
                    k.as_ptr().add(off),
                    1,
                    h as isize,
                    0.0,
                    scores.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
            scores.chunks_exact_mut(n).for_each(softmax);
            // SAFETY: as above.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    n,
                    dh,
                    1.0,
                    scores.as_ptr(),
                    n as isize,
                    1,
                    v.as_ptr().add(off),
                    h as isize,
                    1,
                    0.0,
                    context.as_mut_ptr().add(off),
                    h as isize,
                    1,
                );
            }
        }
        context
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    row.iter_mut().for_each(|v| *v /= sum);
}

/// GELU with the exact error function, as BERT's `gelu`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(f64::from(x) / std::f64::consts::SQRT_2) as f32)
}

/// erf(x) to a relative error below 1.2e-7 (Numerical Recipes' Chebyshev fit of erfc).
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        1.0 - r
    } else {
        r - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [(0.0, 0.0), (0.5, 0.520_499_877_8), (1.0, 0.842_700_792_9), (-2.0, -0.995_322_265_0)] {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn linear_applies_weight_transposed_plus_bias() {
        let l = Linear { w: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], b: vec![0.5, -0.5], inp: 3, out: 2 };
        assert_eq!(l.apply(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], 2), [4.5, 9.5, 2.5, 4.5]);
    }

    #[test]
    fn safetensors_are_read_and_checked() {
        let header = br#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{}}"#;
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header);
        file.extend(1.5f32.to_le_bytes().into_iter().chain(2.5f32.to_le_bytes()));
        assert_eq!(read_tensors(&file).unwrap()["a"], (vec![2], vec![1.5, 2.5]));
        assert!(read_tensors(&file[..file.len() - 1]).is_err());
        assert!(read_tensors(&[0xff; 8]).is_err());
        assert!(read_tensors(&[]).is_err());
    }
}
