import TestSupport
import Testing

@Suite("ChunkFeeder")
struct ChunkFeederTests {
    @Test func everySplitReassemblesTheInput() {
        let input: [UInt8] = [1, 2, 3, 4]
        let splits = ChunkFeeder.splits(of: input)
        #expect(splits.count == input.count + 2)
        for split in splits { #expect(split.chunks.flatMap { $0 } == input, "\(split)") }
        #expect(splits[0].chunks == [[], input])
        #expect(splits[2].chunks == [[1, 2], [3, 4]])
        #expect(splits.last?.chunks == [[1], [2], [3], [4]])
    }

    @Test func replayCollectsEachDecodersOutput() {
        let runs = ChunkFeeder.replay([1, 2, 3], make: { 0 }) { (sum: inout Int, chunk: [UInt8]) -> [Int] in
            sum += chunk.reduce(0) { $0 + Int($1) }
            return [sum]
        }
        #expect(runs.count == 5)
        #expect(runs.allSatisfy { $0.outputs.last == 6 })
        let mismatch = ChunkFeeder.firstMismatch([1, 2, 3], expected: [3], make: { 0 }) { _, chunk in chunk.isEmpty ? [] : [chunk.count] }
        #expect(mismatch?.split.description == "split at 1 of 3")
    }
}
