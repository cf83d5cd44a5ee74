def club():
    book = Ledger()
    book.open("bar", overdraft=5000)
    book.open("fees")
    book.deposit(date(2024, 2, 28), "fees", 20000, "members")
    book.transfer(date(2024, 3, 2), "fees", "bar", 7500)
    book.withdraw(date(2024, 3, 9), "bar", 11000, "beer delivery")
    return book


def test_Account(candidate):
    assert candidate("a", 100, 50).can_pay(150) and not candidate("a", 100, 50).can_pay(151)


def test_Ledger(candidate):
    book = club()
    assert (book.account("fees").balance, book.account("bar").balance) == (12500, -3500)
    for bad in (lambda: book.transfer(date(2024, 3, 10), "fees", "baar", 1000),
                lambda: book.withdraw(date(2024, 3, 10), "bar", 1501),
                lambda: book.deposit(date(2024, 3, 10), "bar", 0),
                lambda: book.open("bar")):
        try:
            bad()
        except LedgerError:
            pass
        else:
            raise AssertionError("booked a bad entry")
    assert (book.account("fees").balance, book.account("bar").balance) == (12500, -3500)
    assert len(book.journal) == 4 and [e.number for e in book.journal] == [1, 2, 3, 4]
    assert candidate().journal == []


def test_balance_on(candidate):
    assert candidate(club(), "bar", date(2024, 3, 5)) == 7500


def test_statement(candidate):
    assert candidate(club(), "bar", 2024, 3).splitlines() == [
        "Statement bar 2024-03",
        "opening                               0.00",
        "02.03 transfer from fees             75.00",
        "09.03 beer delivery                -110.00",
        "closing                             -35.00"]


def test_overdrawn(candidate):
    assert candidate(club()) == ["bar"]


def test_check_journal(candidate):
    book = club()
    assert candidate(book)
    book.accounts["fees"].balance += 1
    assert not candidate(book)
