// rust_target: the Rust ground-truth process for the trace tests, the
// counterpart of trace_target.cpp (same options, startup lines and record
// format) with Rust mangled names and a panic caught by catch_unwind.
//
// Worker threads loop over requests. Every request runs a fixed tree of
// traced functions (module svc: ordinary Rust functions with mangled names,
// e.g. rust_target::svc::settle) whose shape and values depend only on the
// request, and the process records, per thread and request, exactly which
// traced functions it entered and left, in order.
//
//   handle_request(req)                         window start; req: &Request (%rdi)
//     validate(id, amount)
//     compute(asset, amount)
//       fee(price, FEE_BPS)
//     settle(1 + id % 3) -> settle(d - 1) -> ... -> settle(0)   real recursion
//     risky(id) -> risky_inner(id) panics       id % 5 == 3: both frames are
//     recover(id)                                 left by unwinding; caught by
//                                                 catch_unwind in handle_request,
//                                                 then recover
//
// Return values (what a `ret=%ax` fetch reads; all u64):
//   validate(id, amount)   = amount != 0 && amount <= MAX_AMOUNT && id <= MAX_ID  (always 1 here)
//   fee(price, bps)        = price + price * bps / 10000
//   compute(asset, amount) = fee(amount * UNIT_PRICE[asset % 5], FEE_BPS) + asset
//   settle(d)              = d == 0 ? 1 : settle(d - 1) * 3 + d
//   risky_inner(id)        = panics when id % 5 == 3, else id * 2 + 1
//   risky(id)              = risky_inner(id) + 1        (never returns here)
//   recover(id)            = id ^ 0x5a5a
//   handle_request(req)    = validate == 0 ? 0 : compute + settle (+ recover when
//                            the risky call panicked, + risky if it returned)
//
// Requests of worker w (0-based), n = 0, 1, ...:
//   id = w * 1000000 + n, asset = 1 + n % 4, amount = 100 + 37 * (n % 11),
//   flags = FLAG_RISKY when id % 5 == 3, else 0.
//
// Startup lines on stdout (then flushed): "func NAME 0xLIVEADDR" for every
// traced function (handle_request validate compute fee settle risky
// risky_inner recover), "pid N" (decimal), "ready". Nothing is printed after
// "ready", and nothing on stderr: the panic hook is an empty closure.
//
// --record PATH (opened O_APPEND, never truncated): one line per event,
//   TID REQ_ID > FUNC ARG...     entry; each argument as 0x-hex (for
//                                handle_request the Request's address)
//   TID REQ_ID < FUNC RET        return through a ret instruction
//   TID REQ_ID ! FUNC            frame left by panic unwinding, innermost first
// TID is gettid(), REQ_ID decimal, FUNC the unqualified name. A request's
// lines are built in memory and appended with one write() when it ends.
// Recording is done by #[inline(never)] helpers outside svc that call no
// traced function, so it never adds or removes a traced call.
//
// SIGTERM/SIGINT: a handler installed with libc's signal() (declared by hand:
// no crates) sets an AtomicBool; every worker finishes its current request,
// notices it before the next one (sleeps are cut into 10 ms slices), and the
// process exits 0.
//
// Build (tests/targets/CMakeLists.txt): rustc -C panic=unwind -C opt-level=2
// -g -C force-frame-pointers=yes -C codegen-units=1, std only. The traced
// functions are #[inline(never)], and their addresses escape (printed at
// start), so LLVM keeps each one's symbol and C-like signature (no argument
// promotion or dead-argument removal); no call between traced functions is
// in tail position. rust_target_codegen checks all of that with objdump.
// Written for Debian's rustc 1.63 too.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const REQUEST_ID_STRIDE: u64 = 1_000_000; // worker w's ids start at w * stride
const FEE_BPS: u64 = 25;
const MAX_AMOUNT: u64 = 1_000_000;
const MAX_ID: u64 = 1 << 48;
const UNIT_PRICE: [u64; 5] = [0, 250, 1000, 40, 7];

const FLAG_RISKY: u64 = 1; // id % 5 == 3: risky/risky_inner panic, recover

static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);
static RESULT_SINK: AtomicU64 = AtomicU64::new(0); // consumes results

// --- libc, declared by hand (std links it anyway) ----------------------------

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

extern "C" {
    // sighandler_t signal(int, sighandler_t): glibc gives it BSD semantics
    // (the handler stays installed, SA_RESTART).
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    fn gettid() -> i32;
}

extern "C" fn on_stop_signal(_signum: i32) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

// --- recording (untraced) ----------------------------------------------------

struct Recorder {
    enabled: bool,
    tid: i32,
    request: u64,
    lines: String, // the current request's lines
    // Traced frames entered and not yet left, innermost last: what the
    // unwinding lines are derived from, so they name exactly the frames a
    // panic left.
    open: Vec<&'static str>,
}

thread_local! {
    static RECORDER: RefCell<Recorder> = RefCell::new(Recorder {
        enabled: false,
        tid: 0,
        request: 0,
        lines: String::new(),
        open: Vec::new(),
    });
}

fn record_line(recorder: &mut Recorder, kind: char, function: &str, values: &[u64]) {
    if !recorder.enabled {
        return;
    }
    use std::fmt::Write as _;
    let Recorder { tid, request, lines, .. } = recorder;
    let _ = write!(lines, "{} {} {} {}", tid, request, kind, function);
    for value in values {
        let _ = write!(lines, " {:#x}", value);
    }
    lines.push('\n');
}

#[inline(never)]
fn record_entry(function: &'static str, args: &[u64]) {
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        recorder.open.push(function);
        record_line(&mut recorder, '>', function, args);
    });
}

// Called right before the function returns, i.e. before its ret runs.
#[inline(never)]
fn record_return(function: &'static str, value: u64) {
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        if recorder.open.pop() != Some(function) {
            std::process::abort();
        }
        record_line(&mut recorder, '<', function, &[value]);
    });
}

#[inline(never)]
fn open_depth() -> usize {
    RECORDER.with(|recorder| recorder.borrow().open.len())
}

// Called when catch_unwind returned Err: every frame above the catching one
// was left by unwinding.
#[inline(never)]
fn record_unwound_to(depth: usize) {
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        while recorder.open.len() > depth {
            let function = recorder.open.pop().unwrap_or("?");
            record_line(&mut recorder, '!', function, &[]);
        }
    });
}

fn begin_request(id: u64) {
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        recorder.request = id;
        recorder.lines.clear();
        recorder.open.clear();
    });
}

// One write() per request; O_APPEND keeps requests of different threads whole.
fn flush_request(file: &Option<Arc<File>>) {
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        if let Some(file) = file {
            if !recorder.lines.is_empty() && (&**file).write_all(recorder.lines.as_bytes()).is_err() {
                std::process::abort();
            }
        }
        recorder.lines.clear();
    });
}

// --- the traced functions ----------------------------------------------------

mod svc {
    use super::{open_depth, record_entry, record_return, record_unwound_to};
    use super::{FEE_BPS, FLAG_RISKY, MAX_AMOUNT, MAX_ID, UNIT_PRICE};
    use std::panic::{catch_unwind, AssertUnwindSafe};

    #[repr(C)]
    pub struct Request {
        pub id: u64,     // +0
        pub asset: u64,  // +8
        pub amount: u64, // +16
        pub flags: u64,  // +24: FLAG_* bits
    }

    #[inline(never)]
    pub fn validate(id: u64, amount: u64) -> u64 {
        record_entry("validate", &[id, amount]);
        let ok = (amount != 0 && amount <= MAX_AMOUNT && id <= MAX_ID) as u64;
        record_return("validate", ok);
        ok
    }

    #[inline(never)]
    pub fn fee(price: u64, bps: u64) -> u64 {
        record_entry("fee", &[price, bps]);
        let result = price.wrapping_add(price.wrapping_mul(bps) / 10000);
        record_return("fee", result);
        result
    }

    #[inline(never)]
    pub fn compute(asset: u64, amount: u64) -> u64 {
        record_entry("compute", &[asset, amount]);
        let price = amount.wrapping_mul(UNIT_PRICE[(asset % 5) as usize]);
        let result = fee(price, FEE_BPS).wrapping_add(asset);
        record_return("compute", result);
        result
    }

    // Work after the call keeps each level a real call with its own frame and
    // ret, not a loop or a jump.
    #[inline(never)]
    pub fn settle(depth: u64) -> u64 {
        record_entry("settle", &[depth]);
        let mut result = 1;
        if depth != 0 {
            result = settle(depth - 1).wrapping_mul(3).wrapping_add(depth);
        }
        record_return("settle", result);
        result
    }

    #[inline(never)]
    pub fn risky_inner(id: u64) -> u64 {
        record_entry("risky_inner", &[id]);
        if id % 5 == 3 {
            panic!("risky_inner failed");
        }
        let result = id.wrapping_mul(2).wrapping_add(1);
        record_return("risky_inner", result);
        result
    }

    // No catch and nothing to drop: the panic passes straight through.
    #[inline(never)]
    pub fn risky(id: u64) -> u64 {
        record_entry("risky", &[id]);
        let result = risky_inner(id).wrapping_add(1);
        record_return("risky", result);
        result
    }

    #[inline(never)]
    pub fn recover(id: u64) -> u64 {
        record_entry("recover", &[id]);
        let result = id ^ 0x5a5a;
        record_return("recover", result);
        result
    }

    #[inline(never)]
    pub fn handle_request(req: &Request) -> u64 {
        record_entry("handle_request", &[req as *const Request as u64]);
        if validate(req.id, req.amount) == 0 {
            record_return("handle_request", 0);
            return 0;
        }
        let mut total = compute(req.asset, req.amount);
        total = total.wrapping_add(settle(1 + req.id % 3));
        if req.flags & FLAG_RISKY != 0 {
            let id = req.id;
            let depth = open_depth();
            match catch_unwind(AssertUnwindSafe(move || risky(id))) {
                Ok(value) => total = total.wrapping_add(value),
                Err(payload) => {
                    drop(payload);
                    record_unwound_to(depth);
                    total = total.wrapping_add(recover(id));
                }
            }
        }
        record_return("handle_request", total);
        total
    }
}

// The order the "func" lines are printed in.
fn traced_functions() -> [(&'static str, usize); 8] {
    [
        ("handle_request", svc::handle_request as *const () as usize),
        ("validate", svc::validate as *const () as usize),
        ("compute", svc::compute as *const () as usize),
        ("fee", svc::fee as *const () as usize),
        ("settle", svc::settle as *const () as usize),
        ("risky", svc::risky as *const () as usize),
        ("risky_inner", svc::risky_inner as *const () as usize),
        ("recover", svc::recover as *const () as usize),
    ]
}

// --- driver ------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Options {
    threads: u64,
    requests: u64, // per thread; 0 = until signalled
    interval_us: u64,
    first_delay_ms: u64,
}

// Sleeps in slices of at most 10 ms so a stop request is noticed promptly.
fn sleep_us(mut us: u64) {
    while us > 0 && !STOP_REQUESTED.load(Ordering::SeqCst) {
        let slice = us.min(10_000);
        std::thread::sleep(Duration::from_micros(slice));
        us -= slice;
    }
}

fn worker_main(worker: u64, options: Options, record: Option<Arc<File>>) {
    let tid = unsafe { gettid() };
    RECORDER.with(|recorder| {
        let mut recorder = recorder.borrow_mut();
        recorder.enabled = record.is_some();
        recorder.tid = tid;
    });
    let mut n = 0;
    while options.requests == 0 || n < options.requests {
        if STOP_REQUESTED.load(Ordering::SeqCst) {
            break;
        }
        let id = worker * REQUEST_ID_STRIDE + n;
        let request = svc::Request {
            id,
            asset: 1 + n % 4,
            amount: 100 + 37 * (n % 11),
            flags: if id % 5 == 3 { FLAG_RISKY } else { 0 },
        };
        begin_request(id);
        let result = svc::handle_request(&request);
        RESULT_SINK.store(result, Ordering::Relaxed);
        flush_request(&record);
        sleep_us(options.interval_us);
        n += 1;
    }
}

fn parse_count(text: Option<&String>) -> Option<u64> {
    let text = text?;
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_options(args: &[String]) -> Option<(Options, Option<String>, Option<String>)> {
    let mut options = Options { threads: 1, requests: 0, interval_us: 1000, first_delay_ms: 0 };
    let mut record_path = None;
    let mut go_file = None;
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args.get(i + 1);
        if flag == "--record" {
            record_path = Some(value?.clone());
        } else if flag == "--go-file" {
            go_file = Some(value?.clone());
        } else {
            let number = parse_count(value)?;
            match flag {
                "--threads" if (1..=64).contains(&number) => options.threads = number,
                "--requests" => options.requests = number,
                "--interval-us" => options.interval_us = number,
                "--first-delay-ms" if number <= 3600 * 1000 => options.first_delay_ms = number,
                _ => return None,
            }
        }
        i += 2;
    }
    Some((options, record_path, go_file))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (options, record_path, go_file) = match parse_options(&args) {
        Some(parsed) => parsed,
        None => {
            eprintln!(
                "usage: rust_target [--threads N (1-64, default 1)] [--requests N per thread (0 = forever, default)]\n\
                 \x20                  [--interval-us N (default 1000)] [--first-delay-ms N (default 0)] [--record PATH]\n\
                 \x20                  [--go-file PATH (wait until it exists before the first request)]"
            );
            std::process::exit(2);
        }
    };
    let record = match &record_path {
        None => None,
        Some(path) => match OpenOptions::new().append(true).create(true).open(path) {
            Ok(file) => Some(Arc::new(file)),
            Err(error) => {
                eprintln!("rust_target: --record {}: {}", path, error);
                std::process::exit(1);
            }
        },
    };

    // The caught panics must not print "thread '...' panicked at ...".
    std::panic::set_hook(Box::new(|_| {}));
    unsafe {
        signal(SIGTERM, on_stop_signal);
        signal(SIGINT, on_stop_signal);
    }

    {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for (name, address) in traced_functions().iter() {
            let _ = writeln!(out, "func {} {:#x}", name, address);
        }
        let _ = writeln!(out, "pid {}", std::process::id());
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }

    // Tests create the go file once the tracer is attached.
    if let Some(path) = &go_file {
        while !std::path::Path::new(path).exists() && !STOP_REQUESTED.load(Ordering::SeqCst) {
            sleep_us(5000);
        }
    }
    sleep_us(options.first_delay_ms * 1000);

    let mut workers = Vec::new();
    if !STOP_REQUESTED.load(Ordering::SeqCst) {
        for worker in 0..options.threads {
            let record = record.clone();
            workers.push(std::thread::spawn(move || worker_main(worker, options, record)));
        }
    }
    for worker in workers {
        if worker.join().is_err() {
            std::process::exit(1);
        }
    }
}
