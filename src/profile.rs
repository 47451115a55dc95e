//! Model profiles (docs/reference.md, `cmp_profile`): who consumes the pack decides its budget, its
//! token estimate, its utility weights and its packer.

use serde_json::{json, Value};

/// Smallest budget a caller may ask for; smaller asks are raised to it.
pub const MIN_BUDGET: i64 = 300;

/// A resolved model profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Profile name: generic, claude, gpt or cursor.
    pub name: &'static str,
    /// The model's context window (informational).
    pub context_window: u32,
    /// The default and maximum pack budget.
    pub pack_token_budget: i64,
    /// Characters per token of the model's tokenizer family (informational: packing counts tokens
    /// with [`crate::tokens::Counter`]).
    pub chars_per_token: f64,
    /// Utility weights (relevance, recency, authority).
    pub weights: (f64, f64, f64),
    /// Knapsack packer (true) or per-layer greedy (false).
    pub knapsack: bool,
}

/// The generic profile (model NULL or unknown).
pub const GENERIC: Profile = Profile {
    name: "generic",
    context_window: 8192,
    pack_token_budget: 6000,
    chars_per_token: 4.0,
    weights: (0.60, 0.25, 0.15),
    knapsack: false,
};
const CLAUDE: Profile = Profile {
    name: "claude",
    context_window: 200_000,
    pack_token_budget: 12_000,
    chars_per_token: 3.8,
    weights: (0.58, 0.27, 0.15),
    knapsack: true,
};
const GPT: Profile = Profile {
    name: "gpt",
    context_window: 128_000,
    pack_token_budget: 8000,
    chars_per_token: 4.0,
    weights: (0.55, 0.25, 0.20),
    knapsack: true,
};
const CURSOR: Profile = Profile {
    name: "cursor",
    context_window: 32_000,
    pack_token_budget: 3000,
    chars_per_token: 3.6,
    weights: (0.72, 0.14, 0.14),
    knapsack: true,
};

/// Aliases in resolution order: the first profile with an alias among the model's tokens wins.
const ALIASES: &[(&Profile, &[&str])] = &[
    (&CLAUDE, &["claude", "anthropic", "opus", "sonnet", "haiku"]),
    (&GPT, &["chatgpt", "gpt", "openai", "o1", "o3", "4o"]),
    (&CURSOR, &["cursor", "copilot", "codex", "windsurf", "cline", "zed", "continue"]),
];

/// Resolves a free-text model/surface string on word boundaries; None or no alias ⇒ generic.
pub fn resolve(model: Option<&str>) -> Profile {
    let Some(model) = model else { return GENERIC };
    let lower = model.to_lowercase();
    let tokens: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).collect();
    for (profile, aliases) in ALIASES {
        if tokens.iter().any(|t| aliases.contains(t)) {
            return **profile;
        }
    }
    GENERIC
}

impl Profile {
    /// Budget actually allotted: NULL ⇒ the profile's budget; else clamped to [300, pack_token_budget].
    pub fn clamp_budget(&self, ask: Option<i64>) -> i64 {
        match ask {
            None => self.pack_token_budget,
            Some(b) => b.clamp(MIN_BUDGET, self.pack_token_budget),
        }
    }

    /// The profile as `cmp_profile` returns it.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "context_window": self.context_window,
            "pack_token_budget": self.pack_token_budget,
            "chars_per_token": self.chars_per_token,
            "weights": [self.weights.0, self.weights.1, self.weights.2],
            "knapsack": self.knapsack,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_on_word_boundaries() {
        for (model, want) in [
            ("gpt-4o", "gpt"),
            ("o1-preview", "gpt"),
            ("copilot sonnet", "claude"),
            ("command-r-plus", "generic"),
            ("customized", "generic"),
            ("claude-3-5-sonnet", "claude"),
            ("cursor-agent", "cursor"),
            ("Windsurf", "cursor"),
            ("", "generic"),
        ] {
            assert_eq!(resolve(Some(model)).name, want, "{model}");
        }
        assert_eq!(resolve(None).name, "generic");
    }

    #[test]
    fn budgets_clamp() {
        assert_eq!(CLAUDE.clamp_budget(Some(50)), 300);
        assert_eq!(CLAUDE.clamp_budget(Some(50_000)), 12_000);
        assert_eq!(CLAUDE.clamp_budget(None), 12_000);
    }
}
