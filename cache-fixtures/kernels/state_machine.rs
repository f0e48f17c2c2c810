//! A state machine per thread, as a tokenizer writes one: a C-like enum of states, `match`
//! over the state and over the input byte (ranges, `|`, guards, bindings), an enum parameter
//! the host passes as its discriminant (checked at launch), and states compared and cast to
//! integers.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum State {
    Start,
    Number,
    Word,
    Space = 10,
    Error = 255,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Count {
    Numbers,
    Words,
    Errors = 7,
}

use State::*;

fn class_of(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => 0,
        b'a'..=b'z' | b'A'..=b'Z' | b'_' => 1,
        b' ' | b'\t' | b'\n' => 2,
        _ => 3,
    }
}

fn step(s: State, c: u8) -> State {
    let class = class_of(c);
    match s {
        Error => Error,
        Number if class == 1 => Error,
        Start | Space | Number | Word => match class {
            0 if s == Word => Word,
            0 => Number,
            1 => Word,
            2 => Space,
            _ => Error,
        },
    }
}

/// Each thread scans one line of `text` (`width` bytes) and counts the tokens of kind `what`.
#[kernel]
pub fn count_tokens(text: &[u8], width: usize, what: Count, counts: &mut [u32], last: &mut [u8]) {
    let line = global_id_x();
    if (line + 1) * width <= text.len() {
        let mut s = Start;
        let mut n = 0u32;
        for i in line * width..(line + 1) * width {
            let next = step(s, text[i]);
            let ends = next != s && s != Start && s != Space;
            if ends {
                n += match what {
                    Count::Numbers => (s == Number) as u32,
                    Count::Words => (s == Word) as u32,
                    Count::Errors => (s == Error) as u32,
                };
            }
            s = next;
        }
        let tail = match what {
            Count::Numbers if s == Number => 1,
            Count::Words if s == Word => 1,
            Count::Errors if s == Error => 1,
            _ => 0,
        };
        counts[line] = n + tail;
        last[line] = s as u8;
    }
}

/// Traffic lights advanced `ticks` times: the state kept as its `i32` discriminant in memory.
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Light {
    Red = -1,
    Green = 1,
    Yellow = 2,
}

fn light_of(v: i32) -> Light {
    match v {
        -1 => Light::Red,
        1 => Light::Green,
        _ => Light::Yellow,
    }
}

#[kernel]
pub fn traffic(lights: &mut [i32], ticks: u32, stops: &mut [u32]) {
    let i = global_id_x();
    if i < lights.len() {
        let mut l = light_of(lights[i]);
        let mut stopped = 0;
        for _ in 0..ticks {
            l = match l {
                Light::Red => Light::Green,
                Light::Green => Light::Yellow,
                Light::Yellow => Light::Red,
            };
            if l < Light::Green {
                stopped += 1;
            }
        }
        lights[i] = l as i32;
        stops[i] = stopped;
    }
}
