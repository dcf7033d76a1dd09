/// Drops the consumed prefix `buffer[..<start]` of a parser's input buffer, when that costs no more
/// than the bytes consumed since it was last dropped (amortised O(1) per byte) instead of shifting
/// the buffer after every message. Once everything is consumed the buffer is emptied, and released
/// outright when its capacity exceeds `retainedCapacity` (an idle connection keeps no more).
func dropConsumedBytes(_ buffer: inout [UInt8], start: inout Int, retainedCapacity: Int) {
    guard start > 0 else { return }
    if start == buffer.count {
        if buffer.capacity > retainedCapacity { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        start = 0
    } else if start >= buffer.count - start {
        buffer.removeSubrange(0..<start)
        start = 0
    }
}
