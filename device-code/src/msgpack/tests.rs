//! The MessagePack subset against Python's `msgpack` (Debian's python3-msgpack): the same
//! bytes for the same object, round trips, and hostile inputs refused without allocating.

use std::io::Write;
use std::process::{Command, Stdio};

use super::*;

/// A `python3` that imports `msgpack`: the one on PATH, else the system's (a pyenv or venv
/// interpreter on PATH may lack Debian's modules).
fn python() -> &'static str {
    for candidate in ["python3", "/usr/bin/python3"] {
        let works =
            Command::new(candidate).args(["-c", "import msgpack"]).output().is_ok_and(|output| output.status.success());
        if works {
            return candidate;
        }
    }
    panic!("no python3 with msgpack: install Debian's python3-msgpack");
}

/// `value` as a Python expression; strings and bytes go through hex so no quoting is needed.
fn to_python(value: &Value) -> String {
    let hex = |bytes: &[u8]| bytes.iter().map(|byte| format!("{byte:02x}")).collect::<String>();
    match value {
        Value::Nil => "None".to_owned(),
        Value::Bool(flag) => if *flag { "True" } else { "False" }.to_owned(),
        Value::Int(number) => number.to_string(),
        Value::UInt(number) => number.to_string(),
        // Rust's `{:?}` of a float is the shortest text that reads back as the same float.
        Value::Float(number) => format!("float('{number:?}')"),
        Value::Str(text) => format!("bytes.fromhex('{}').decode()", hex(text.as_bytes())),
        Value::Bin(bytes) => format!("bytes.fromhex('{}')", hex(bytes)),
        Value::Array(items) => format!("[{}]", items.iter().map(to_python).collect::<Vec<_>>().join(", ")),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, item)| format!("{}: {}", to_python(&Value::str(key)), to_python(item)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn packb(value: &Value) -> Vec<u8> {
    let script =
        format!("import msgpack, sys\nsys.stdout.buffer.write(msgpack.packb({}, use_bin_type=True))", to_python(value));
    // On standard input: the script for a 65,536-element array is longer than a command line.
    let mut child = Command::new(python())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child.stdin.take().expect("piped").write_all(script.as_bytes()).expect("write the script");
    let output = child.wait_with_output().expect("wait for python3");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

fn encoded(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out).expect("encodes");
    out
}

fn sample() -> Value {
    let mut values = vec![Value::Nil, Value::Bool(true), Value::Bool(false)];
    for number in [0u64, 1, 127, 128, 255, 256, 65535, 65536, u64::from(u32::MAX), 1 << 32, u64::MAX] {
        values.push(Value::UInt(number));
    }
    for number in [-1i64, -32, -33, -128, -129, -32768, -32769, i64::from(i32::MIN), i64::from(i32::MIN) - 1, i64::MIN]
    {
        values.push(Value::Int(number));
    }
    values.push(Value::Int(5));
    for len in [0usize, 31, 32, 255, 256, 65535, 65536] {
        values.push(Value::Str("é".repeat(len / 2) + &"x".repeat(len % 2)));
        values.push(Value::Bin(vec![7u8; len]));
    }
    values.push(Value::Array((0..16).map(Value::UInt).collect()));
    values.push(Value::Array((0..65536).map(|_| Value::Nil).collect()));
    values.push(Value::Map((0..16).map(|index| (format!("k{index}"), Value::UInt(index))).collect()));
    values.push(Value::Float(0.5));
    values.push(Value::map([
        ("kpack_search_paths", Value::Array(vec![Value::str("../.kpack/torch_@GFXARCH@.kpack")])),
        ("kernel_name", Value::str("lib/libtorch_hip.so")),
    ]));
    Value::Array(values)
}

#[test]
fn encoding_matches_python_packb_byte_for_byte() {
    let value = sample();
    assert_eq!(encoded(&value), packb(&value));
    // The pieces one by one too, so a mismatch names its value.
    if let Value::Array(items) = &value {
        for item in items.iter().take(40) {
            assert_eq!(encoded(item), packb(item), "{item:?}");
        }
    }
}

#[test]
fn values_round_trip() {
    let value = sample();
    let decoded = decode(&encoded(&value)).expect("decodes");
    // A non-negative `Int` comes back as the `UInt` it was written as.
    let Value::Array(mut expected) = value else { unreachable!("sample is an array") };
    for item in &mut expected {
        if *item == Value::Int(5) {
            *item = Value::UInt(5);
        }
    }
    assert_eq!(decoded, Value::Array(expected));
    let marker = decode(&packb(&Value::map([("kernel_name", Value::str("a"))]))).expect("decodes");
    assert_eq!(marker.get("kernel_name").and_then(Value::as_str), Some("a"));
    // Signed encodings of non-negative numbers (other writers use them) read as unsigned.
    assert_eq!(decode(&[0xd0, 0x05]), Ok(Value::UInt(5)));
    assert_eq!(decode(&[0xd1, 0xff, 0x00]), Ok(Value::Int(-256)));
}

#[test]
fn hostile_inputs_are_refused_without_allocating_their_claims() {
    let check = |bytes: &[u8], reason: &str| {
        let error = decode(bytes).expect_err("refused");
        assert!(error.to_string().contains(reason), "{bytes:02x?}: {error}");
    };
    check(&[], "past the end");
    check(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a'], "past the end");
    check(&[0xc6, 0x7f, 0xff, 0xff, 0xff], "past the end");
    check(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0], "more elements than bytes");
    check(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0xa0, 0xc0], "more entries than bytes");
    check(&[0x81, 0x01, 0xc0], "not a string");
    check(&[0xa1, 0xff], "not UTF-8");
    check(&[0xc7, 0x01, 0x01, 0x00], "extension");
    check(&[0xc0, 0xc0], "bytes follow");
    let deep: Vec<u8> = std::iter::repeat_n(0x91u8, 100).chain([0xc0]).collect();
    check(&deep, "deeper");
    let mut shallow: Vec<u8> = std::iter::repeat_n(0x91u8, MAX_DEPTH).collect();
    shallow.push(0xc0);
    assert!(decode(&shallow).is_ok());
}
