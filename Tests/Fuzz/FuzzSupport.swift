// Helpers every libFuzzer harness shares; fuzz.sh compiles this file with each harness.

/// Chunk sizes 1…31 from a PRNG seeded by the input, covering `input.count` bytes.
func derivedChunkSizes(_ input: [UInt8]) -> [Int] {
    var state: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in input.prefix(64) { state = (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    var sizes: [Int] = []
    var remaining = input.count
    while remaining > 0 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let next = min(Int(state >> 59) + 1, remaining)
        sizes.append(next)
        remaining -= next
    }
    return sizes
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
