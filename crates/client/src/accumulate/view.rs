//! The typed chunk view: exactly the fields of a data event the accumulator reads, filled
//! in place by the strict serde reading ([`ChunkView::parse`]) or by the one-pass scanner
//! (`scan`), or built leniently from a `Value` ([`ChunkView::from_value`]); and the
//! [`Usage`] counts a `usage` object gives.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer};
use serde_json::Value;

use crate::tool_calls::ToolDelta;

/// Token counts from one `usage` object (OpenAI schema). `None` = not reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `usage.total_tokens`.
    pub total_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`; `None` when `prompt_tokens_details`
    /// is absent or `null` (C12 B), `Some(0)` when reported as 0 (C12 C).
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Reads a `usage` JSON object; non-numeric fields are treated as absent.
    pub fn from_json(v: &Value) -> Self {
        Self {
            prompt_tokens: v.get("prompt_tokens").and_then(Value::as_u64),
            completion_tokens: v.get("completion_tokens").and_then(Value::as_u64),
            total_tokens: v.get("total_tokens").and_then(Value::as_u64),
            cached_tokens: v
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(Value::as_u64),
            reasoning_tokens: v
                .get("completion_tokens_details")
                .and_then(|d| d.get("reasoning_tokens"))
                .and_then(Value::as_u64),
        }
    }

    /// True when every reported prompt/completion/total count is 0 (and at least one is
    /// reported): implausible for a response with output (C12 D).
    pub fn is_all_zero(&self) -> bool {
        let counts = [
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens,
        ];
        counts.iter().any(Option::is_some) && counts.iter().all(|c| matches!(c, None | Some(0)))
    }
}

/// A JSON string, borrowed from the event when it has no escapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct JStr<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for JStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = JStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<JStr<'a>, E> {
                Ok(JStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

impl<'a> JStr<'a> {
    pub(super) fn of(v: Option<&'a Value>) -> Option<Self> {
        v.and_then(Value::as_str).map(|s| JStr(Cow::Borrowed(s)))
    }
}

/// A JSON object read into `T` (serde would also fill a struct from an array; this
/// refuses one, so the strict view never reads a shape the lenient one ignores).
#[derive(Debug, PartialEq)]
pub(super) struct Obj<T>(pub(super) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// One streamed chunk (or a non-streamed body's top level), as far as it is read. The
/// strict view is filled in place ([`Fill`]); the lenient one built from a `Value`.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ChunkView<'a> {
    pub(super) choices: Option<Choices<'a>>,
    // Boxed: present once per response at most.
    pub(super) usage: Option<Box<Obj<UsageView>>>,
    pub(super) timings: Option<Box<Obj<TimingsView>>>,
    /// Present and not null: an in-band error (read from a `Value`, cold).
    pub(super) error: Option<IgnoredAny>,
    pub(super) object: Option<JStr<'a>>,
    /// The model the server names (OTLP's `gen_ai.response.model`).
    pub(super) model: Option<JStr<'a>>,
}

impl<'de> Fill<'de> for ChunkView<'de> {
    const KEYS: &'static [&'static str] =
        &["choices", "usage", "timings", "error", "object", "model"];

    fn fill<A: MapAccess<'de>>(&mut self, key: usize, map: &mut A) -> Result<(), A::Error> {
        match key {
            0 => map.next_value_seed(FillOpt(&mut self.choices)),
            1 => map.next_value().map(|v| self.usage = v),
            2 => map.next_value().map(|v| self.timings = v),
            3 => map.next_value().map(|v| self.error = v),
            4 => map.next_value().map(|v| self.object = v),
            _ => map.next_value().map(|v| self.model = v),
        }
    }
}

impl<'a> ChunkView<'a> {
    /// The view [`super::scan::scan_into`] reads from a chunk of the memo's shape: one choice
    /// with `index` and a `delta` whose only member read is `content` (`text`).
    pub(super) fn content_only(index: Option<u64>, text: &'a str) -> Self {
        ChunkView {
            choices: Some(Choices {
                first: Some(ChoiceView {
                    index,
                    delta: Some(DeltaView {
                        content: Some(JStr(Cow::Borrowed(text))),
                        ..DeltaView::default()
                    }),
                    ..ChoiceView::default()
                }),
                rest: Vec::new(),
            }),
            ..ChunkView::default()
        }
    }

    /// The strict typed view of one data event; `None` when `data` is not an object of
    /// the expected shape (then the lenient reading decides).
    pub(super) fn parse(data: &'a str) -> Option<Self> {
        let mut view = ChunkView::default();
        let mut de = serde_json::Deserializer::from_str(data);
        FillObj(&mut view).deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(view)
    }

    /// The lenient reading of a `Value` (wrong types count as absent), as the accumulator
    /// read chunks before the typed view.
    pub(super) fn from_value(v: &'a Value) -> Self {
        let obj = |k: &str| v.get(k).filter(|x| x.is_object());
        ChunkView {
            choices: match v.get("choices") {
                Some(Value::Array(items)) => Some(Choices::from_values(items)),
                _ => None,
            },
            usage: obj("usage").map(|u| Box::new(Obj(UsageView::from_value(u)))),
            timings: obj("timings").map(|t| {
                Box::new(Obj(TimingsView {
                    cache_n: t.get("cache_n").and_then(Value::as_u64),
                    prompt_n: t.get("prompt_n").and_then(Value::as_u64),
                }))
            }),
            error: None,
            object: JStr::of(v.get("object")),
            model: JStr::of(v.get("model")),
        }
    }
}

/// The `choices` array; the first entry inline (no allocation for one choice).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Choices<'a> {
    pub(super) first: Option<ChoiceView<'a>>,
    pub(super) rest: Vec<ChoiceView<'a>>,
}

impl<'a> Choices<'a> {
    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &ChoiceView<'a>> {
        self.first.iter().chain(self.rest.iter())
    }

    pub(super) fn from_values(items: &'a [Value]) -> Self {
        let mut out = Choices::default();
        for item in items {
            let c = ChoiceView::from_value(item);
            if out.first.is_none() {
                out.first = Some(c);
            } else {
                out.rest.push(c);
            }
        }
        out
    }
}

impl<'de> FillIn<'de> for Choices<'de> {
    /// Fills the array in place, each entry a [`ChoiceView`] object.
    fn fill_in<D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error> {
        struct Seq<'o, 'a>(&'o mut Choices<'a>);
        impl<'de> Visitor<'de> for Seq<'_, 'de> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                let first = self.0.first.insert(ChoiceView::default());
                if seq.next_element_seed(FillObj(first))?.is_none() {
                    self.0.first = None;
                    return Ok(());
                }
                // More than one choice (n > 1): filled aside, then moved into `rest` (no
                // allocation for the common single choice).
                loop {
                    let mut next = ChoiceView::default();
                    if seq.next_element_seed(FillObj(&mut next))?.is_none() {
                        return Ok(());
                    }
                    self.0.rest.push(next);
                }
            }
        }
        d.deserialize_seq(Seq(self))
    }
}

/// One entry of `choices`.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ChoiceView<'a> {
    pub(super) index: Option<u64>,
    pub(super) finish_reason: Option<JStr<'a>>,
    pub(super) delta: Option<DeltaView<'a>>,
    /// `/v1/completions` text.
    pub(super) text: Option<JStr<'a>>,
}

impl<'de> Fill<'de> for ChoiceView<'de> {
    const KEYS: &'static [&'static str] = &["index", "finish_reason", "delta", "text"];

    fn fill<A: MapAccess<'de>>(&mut self, key: usize, map: &mut A) -> Result<(), A::Error> {
        match key {
            0 => map.next_value().map(|v| self.index = v),
            1 => map.next_value().map(|v| self.finish_reason = v),
            2 => map.next_value_seed(FillOpt(&mut self.delta)),
            _ => map.next_value().map(|v| self.text = v),
        }
    }
}

impl<'a> ChoiceView<'a> {
    pub(super) fn from_value(v: &'a Value) -> Self {
        ChoiceView {
            index: v.get("index").and_then(Value::as_u64),
            finish_reason: JStr::of(v.get("finish_reason")),
            delta: v.get("delta").map(|d| DeltaView {
                content: JStr::of(d.get("content")),
                reasoning_content: JStr::of(d.get("reasoning_content")),
                reasoning: JStr::of(d.get("reasoning")),
                tool_calls: match d.get("tool_calls") {
                    Some(Value::Array(calls)) => Some(ToolDeltas {
                        len: calls.len(),
                        entries: calls
                            .iter()
                            .filter(|c| c.is_object())
                            .map(ToolDeltaView::from_value)
                            .collect(),
                    }),
                    _ => None,
                },
            }),
            text: JStr::of(v.get("text")),
        }
    }
}

/// A choice's `delta`.
#[derive(Debug, Default, PartialEq)]
pub(super) struct DeltaView<'a> {
    pub(super) content: Option<JStr<'a>>,
    pub(super) reasoning_content: Option<JStr<'a>>,
    pub(super) reasoning: Option<JStr<'a>>,
    pub(super) tool_calls: Option<ToolDeltas<'a>>,
}

impl<'de> Fill<'de> for DeltaView<'de> {
    const KEYS: &'static [&'static str] =
        &["content", "reasoning_content", "reasoning", "tool_calls"];

    fn fill<A: MapAccess<'de>>(&mut self, key: usize, map: &mut A) -> Result<(), A::Error> {
        match key {
            0 => map.next_value().map(|v| self.content = v),
            1 => map.next_value().map(|v| self.reasoning_content = v),
            2 => map.next_value().map(|v| self.reasoning = v),
            _ => map.next_value().map(|v| self.tool_calls = v),
        }
    }
}

/// A view filled in place from one JSON value (an object view, or the `choices` array).
pub(super) trait FillIn<'de>: Default {
    /// Reads the value `d` holds into `self`.
    fn fill_in<D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error>;
}

impl<'de, T: Fill<'de>> FillIn<'de> for T {
    fn fill_in<D: Deserializer<'de>>(&mut self, d: D) -> Result<(), D::Error> {
        FillObj(self).deserialize(d)
    }
}

/// A view filled in place from a JSON object: each of `KEYS` at most once (a duplicate
/// fails the strict view, as serde's derive does), other members skipped.
pub(super) trait Fill<'de>: Default {
    /// The members read, by position.
    const KEYS: &'static [&'static str];

    /// Reads the value of member `KEYS[key]` from `map`.
    fn fill<A: MapAccess<'de>>(&mut self, key: usize, map: &mut A) -> Result<(), A::Error>;
}

/// Fills a [`Fill`] view from an object (an array is refused).
pub(super) struct FillObj<'o, T>(pub(super) &'o mut T);

impl<'de, T: Fill<'de>> DeserializeSeed<'de> for FillObj<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Fill<'de>> Visitor<'de> for FillObj<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = 0u32;
        while let Some(key) = map.next_key::<JStr<'de>>()? {
            match T::KEYS.iter().position(|k| *k == key.0) {
                Some(i) => {
                    if seen & (1 << i) != 0 {
                        return Err(serde::de::Error::duplicate_field(T::KEYS[i]));
                    }
                    seen |= 1 << i;
                    self.0.fill(i, &mut map)?;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Fills an optional view: `null` leaves it `None`.
pub(super) struct FillOpt<'o, T>(pub(super) &'o mut Option<T>);

impl<'de, T: FillIn<'de>> DeserializeSeed<'de> for FillOpt<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, T: FillIn<'de>> Visitor<'de> for FillOpt<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.insert(T::default()).fill_in(d)
    }
}

/// A `delta.tool_calls` array: its length (a non-empty array is a token event) and the
/// entries that are objects (others are ignored).
#[derive(Debug, Default, PartialEq)]
pub(super) struct ToolDeltas<'a> {
    pub(super) len: usize,
    pub(super) entries: Vec<ToolDeltaView<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ToolDeltas<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries: Vec<Obj<ToolDeltaView<'a>>> = Deserialize::deserialize(d)?;
        Ok(ToolDeltas {
            len: entries.len(),
            entries: entries.into_iter().map(|Obj(e)| e).collect(),
        })
    }
}

/// One `tool_calls` entry (streamed delta or complete call).
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct ToolDeltaView<'a> {
    pub(super) index: Option<u64>,
    #[serde(borrow)]
    pub(super) id: Option<JStr<'a>>,
    #[serde(borrow)]
    pub(super) function: Option<Obj<FunctionView<'a>>>,
}

/// A tool call's `function`.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct FunctionView<'a> {
    #[serde(borrow)]
    pub(super) name: Option<JStr<'a>>,
    /// A string; an object argument (some servers) fails the strict view and is
    /// serialized by the lenient one.
    #[serde(borrow)]
    pub(super) arguments: Option<JStr<'a>>,
}

impl<'a> ToolDeltaView<'a> {
    pub(super) fn from_value(v: &'a Value) -> Self {
        ToolDeltaView {
            index: v.get("index").and_then(Value::as_u64),
            id: JStr::of(v.get("id")),
            function: v.get("function").map(|f| {
                Obj(FunctionView {
                    name: JStr::of(f.get("name")),
                    arguments: match f.get("arguments") {
                        Some(Value::String(s)) => Some(JStr(Cow::Borrowed(s))),
                        Some(o @ Value::Object(_)) => Some(JStr(Cow::Owned(o.to_string()))),
                        _ => None,
                    },
                })
            }),
        }
    }

    pub(super) fn as_delta(&self) -> ToolDelta<'_> {
        let function = self.function.as_ref().map(|Obj(f)| f);
        ToolDelta {
            index: self.index,
            id: self.id.as_ref().map(|s| &*s.0).filter(|s| !s.is_empty()),
            has_function: function.is_some(),
            name: function
                .and_then(|f| f.name.as_ref())
                .map(|s| &*s.0)
                .filter(|s| !s.is_empty()),
            arguments: function.and_then(|f| f.arguments.as_ref()).map(|s| &*s.0),
        }
    }
}

/// `usage`.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct UsageView {
    pub(super) prompt_tokens: Option<u64>,
    pub(super) completion_tokens: Option<u64>,
    pub(super) total_tokens: Option<u64>,
    pub(super) prompt_tokens_details: Option<Obj<CachedView>>,
    pub(super) completion_tokens_details: Option<Obj<ReasoningView>>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct CachedView {
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct ReasoningView {
    pub(super) reasoning_tokens: Option<u64>,
}

impl UsageView {
    pub(super) fn from_value(v: &Value) -> Self {
        let u = Usage::from_json(v);
        UsageView {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
            prompt_tokens_details: Some(Obj(CachedView {
                cached_tokens: u.cached_tokens,
            })),
            completion_tokens_details: Some(Obj(ReasoningView {
                reasoning_tokens: u.reasoning_tokens,
            })),
        }
    }

    pub(super) fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            total_tokens: self.total_tokens,
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|Obj(d)| d.cached_tokens),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|Obj(d)| d.reasoning_tokens),
        }
    }
}

/// llama.cpp `timings`.
#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct TimingsView {
    pub(super) cache_n: Option<u64>,
    pub(super) prompt_n: Option<u64>,
}
