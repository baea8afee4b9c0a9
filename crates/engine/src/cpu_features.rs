// Shared by build.rs (which chooses the CPU features the component is precompiled for)
// and the runtime (which checks, before loading it, that this CPU has them).

/// The CPU features Cranelift can compile for on this architecture: each Cranelift setting
/// with the name `std::arch`'s feature detection gives the same feature.
#[cfg(target_arch = "x86_64")]
#[allow(dead_code)] // build.rs and the tests read it; the runtime only checks
const KNOWN_FEATURES: &[(&str, &str)] = &[
    ("has_cmpxchg16b", "cmpxchg16b"),
    ("has_sse3", "sse3"),
    ("has_ssse3", "ssse3"),
    ("has_sse41", "sse4.1"),
    ("has_sse42", "sse4.2"),
    ("has_popcnt", "popcnt"),
    ("has_avx", "avx"),
    ("has_avx2", "avx2"),
    ("has_fma", "fma"),
    ("has_bmi1", "bmi1"),
    ("has_bmi2", "bmi2"),
    ("has_lzcnt", "lzcnt"),
    ("has_avx512bitalg", "avx512bitalg"),
    ("has_avx512dq", "avx512dq"),
    ("has_avx512f", "avx512f"),
    ("has_avx512vl", "avx512vl"),
    ("has_avx512vbmi", "avx512vbmi"),
    ("has_avx512vnni", "avx512vnni"),
];

/// x86-64-v2 (every x86-64 CPU since about 2009): what a default build precompiles for.
#[cfg(target_arch = "x86_64")]
#[allow(dead_code)] // build.rs and the tests read it
const BASELINE_FEATURES: &[&str] = &["cmpxchg16b", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"];

#[cfg(target_arch = "aarch64")]
#[allow(dead_code)]
const KNOWN_FEATURES: &[(&str, &str)] = &[
    ("has_lse", "lse"),
    ("has_pauth", "paca"),
    ("has_fp16", "fp16"),
    ("has_dotprod", "dotprod"),
    ("has_i8mm", "i8mm"),
];

/// Armv8.0-A: nothing beyond the architecture.
#[cfg(target_arch = "aarch64")]
#[allow(dead_code)]
const BASELINE_FEATURES: &[&str] = &[];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[allow(dead_code)]
const KNOWN_FEATURES: &[(&str, &str)] = &[];

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[allow(dead_code)]
const BASELINE_FEATURES: &[&str] = &[];

/// Whether this CPU has `feature` (a `std::arch` name of [`KNOWN_FEATURES`]); `None` for a
/// name this architecture does not know.
fn cpu_has(feature: &str) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(match feature {
            "cmpxchg16b" => std::arch::is_x86_feature_detected!("cmpxchg16b"),
            "sse3" => std::arch::is_x86_feature_detected!("sse3"),
            "ssse3" => std::arch::is_x86_feature_detected!("ssse3"),
            "sse4.1" => std::arch::is_x86_feature_detected!("sse4.1"),
            "sse4.2" => std::arch::is_x86_feature_detected!("sse4.2"),
            "popcnt" => std::arch::is_x86_feature_detected!("popcnt"),
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "bmi1" => std::arch::is_x86_feature_detected!("bmi1"),
            "bmi2" => std::arch::is_x86_feature_detected!("bmi2"),
            "lzcnt" => std::arch::is_x86_feature_detected!("lzcnt"),
            "avx512bitalg" => std::arch::is_x86_feature_detected!("avx512bitalg"),
            "avx512dq" => std::arch::is_x86_feature_detected!("avx512dq"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
            "avx512vbmi" => std::arch::is_x86_feature_detected!("avx512vbmi"),
            "avx512vnni" => std::arch::is_x86_feature_detected!("avx512vnni"),
            _ => return None,
        })
    }
    #[cfg(target_arch = "aarch64")]
    {
        Some(match feature {
            "lse" => std::arch::is_aarch64_feature_detected!("lse"),
            "paca" => std::arch::is_aarch64_feature_detected!("paca"),
            "fp16" => std::arch::is_aarch64_feature_detected!("fp16"),
            "dotprod" => std::arch::is_aarch64_feature_detected!("dotprod"),
            "i8mm" => std::arch::is_aarch64_feature_detected!("i8mm"),
            _ => return None,
        })
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = feature;
        None
    }
}
