from textkit import camel_to_snake, slugify, snake_to_camel, title_case


def test_slugify_basic():
    assert slugify("Hello World") == "hello-world"


def test_slugify_separator():
    assert slugify("Hello World", separator="_") == "hello_world"


def test_camel_to_snake_simple():
    assert camel_to_snake("userName") == "user_name"


def test_snake_to_camel_simple():
    assert snake_to_camel("user_name") == "userName"


def test_snake_to_camel_upper():
    assert snake_to_camel("user_name", upper_first=True) == "UserName"


def test_title_case_simple():
    assert title_case("war and peace") == "War and Peace"
