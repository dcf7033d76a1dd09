// HashingTests
