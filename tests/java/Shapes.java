// Classes whose CLASS_LOAD the tests inspect in detail (names, fields, methods, line ranges).
interface Shape {
    double area();
}

class Circle implements Shape, java.io.Serializable {
    static int count;
    static final String KIND = "circle";
    double r;
    int id;

    Circle(double r) {
        this.r = r;
        this.id = ++count;
    }

    public double area() { //@area-start
        double a = Math.PI * r * r;
        return a; //@area-end
    }

    native void nativeThing();
}
