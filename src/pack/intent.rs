//! Intent detection and intent → layer weights (the table in docs/protocol.md, "Packing").

use super::Layer;
use crate::text;

/// What the task is trying to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Answer a question (default).
    Answer,
    /// Do something: fix, build, deploy, …
    Act,
    /// Write something: reply, email, …
    Draft,
    /// Plan: roadmap, priorities, …
    Plan,
    /// Empty task: what is there to recall.
    Recall,
}

const DRAFT: &[&str] = &["write", "draft", "reply", "respond", "email", "message", "compose", "post"];
const ACT: &[&str] = &[
    "fix",
    "implement",
    "build",
    "run",
    "deploy",
    "schedule",
    "book",
    "create",
    "configure",
    "refactor",
    "ship",
    "migrate",
    "set up",
];
const PLAN: &[&str] =
    &["plan", "prioritise", "prioritize", "roadmap", "organise", "organize", "next steps", "strategy"];

fn mentions(words: &[String], phrases: &[&str]) -> bool {
    phrases.iter().any(|p| {
        let parts: Vec<&str> = p.split(' ').collect();
        words.windows(parts.len()).any(|w| w.iter().zip(&parts).all(|(a, b)| a == b))
    })
}

/// Detects the intent: the first rule that matches, in the order draft, act, plan; an empty task
/// recalls; anything else answers.
pub fn detect(task: &str) -> Intent {
    let words = text::words(task);
    if words.is_empty() {
        Intent::Recall
    } else if mentions(&words, DRAFT) {
        Intent::Draft
    } else if mentions(&words, ACT) {
        Intent::Act
    } else if mentions(&words, PLAN) {
        Intent::Plan
    } else {
        Intent::Answer
    }
}

impl Intent {
    /// Name for the envelope.
    pub fn name(self) -> &'static str {
        match self {
            Intent::Answer => "answer",
            Intent::Act => "act",
            Intent::Draft => "draft",
            Intent::Plan => "plan",
            Intent::Recall => "recall",
        }
    }

    /// Layer weights in [`Layer::ALL`] order: constraints, decisions, facts, entity, procedures,
    /// identity, open_loops, recency.
    pub fn weights(self) -> [f64; 8] {
        match self {
            Intent::Answer => [10.0, 15.0, 40.0, 15.0, 0.0, 5.0, 5.0, 10.0],
            Intent::Act => [10.0, 15.0, 25.0, 10.0, 20.0, 5.0, 10.0, 5.0],
            Intent::Draft => [15.0, 10.0, 20.0, 15.0, 0.0, 25.0, 5.0, 10.0],
            Intent::Plan => [10.0, 20.0, 20.0, 10.0, 0.0, 5.0, 25.0, 10.0],
            Intent::Recall => [10.0, 15.0, 0.0, 5.0, 5.0, 5.0, 15.0, 45.0],
        }
    }

    /// Weight of one layer.
    pub fn weight(self, l: Layer) -> f64 {
        self.weights()[l as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_rule_wins() {
        assert_eq!(detect(""), Intent::Recall);
        assert_eq!(detect("  !? "), Intent::Recall);
        assert_eq!(detect("Draft a reply and fix the bug"), Intent::Draft);
        assert_eq!(detect("please set up the CI"), Intent::Act);
        assert_eq!(detect("setup notes"), Intent::Answer);
        assert_eq!(detect("what are the next steps"), Intent::Plan);
        assert_eq!(detect("Prioritize Q3"), Intent::Plan);
        assert_eq!(detect("when is the launch?"), Intent::Answer);
        assert_eq!(detect("rerun"), Intent::Answer);
        let w = Intent::Answer.weights();
        assert_eq!(w.iter().sum::<f64>(), 100.0);
    }

    #[test]
    fn every_intent_splits_one_hundred_over_the_layers() {
        for i in [Intent::Answer, Intent::Act, Intent::Draft, Intent::Plan, Intent::Recall] {
            assert_eq!(i.weights().iter().sum::<f64>(), 100.0, "{}", i.name());
            assert!(Layer::ALL.iter().all(|&l| i.weight(l) == i.weights()[l as usize]));
        }
        // A recall has no task to match facts against: the newest memories lead.
        assert_eq!(Intent::Recall.weight(Layer::Facts), 0.0);
        assert_eq!(detect("what happened recently?"), Intent::Answer);
    }
}
