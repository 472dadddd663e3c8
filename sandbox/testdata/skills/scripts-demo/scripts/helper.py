def greet(name):
    return "hello %s from python" % name
