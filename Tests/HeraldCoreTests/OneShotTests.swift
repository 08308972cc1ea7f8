import HeraldCore
import Testing

@Suite("OneShot: a value that arrives once")
struct OneShotTests {
    @Test("waiters before and after the value get the first one; a later fulfil changes nothing")
    func firstWins() async {
        let shot = OneShot<Int>()
        #expect(shot.value == nil)
        let early = Task { await shot.wait() }
        let alsoEarly = Task { await shot.wait() }
        #expect(shot.fulfil(1))
        #expect(!shot.fulfil(2))
        let answers = (await early.value, await alsoEarly.value)
        #expect(answers == (1, 1))
        #expect(await shot.wait() == 1 && shot.value == 1)
    }
}
