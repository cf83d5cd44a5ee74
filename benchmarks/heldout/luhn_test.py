def test_valid_card_number(candidate):
    assert candidate("4111 1111 1111 1111") and candidate("5555-5555-5555-4444")
    assert candidate("378282246310005") and candidate("4012888888881881")
    assert candidate("6011000990139424") and candidate("3566 0020 2036 0505")
    assert not candidate("4111 1111 1111 1112") and not candidate("4111 1111 1111 1121")
    assert not candidate("378282246310006") and not candidate("4111-1111-1111-111a")
    assert not candidate("0000 0000") and not candidate("") and not candidate("4111_1111_1111_1111")
