from setuptools import setup
setup(name='calc', version='1.0', packages=['calc'])
